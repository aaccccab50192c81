"""Sweeps that say what ran and restart where they stopped: job names with the swept options, the
final table's option columns, and ``resume=auto`` over a whole sweep (skip, continue, start)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import tiny_data_overrides
from helpers.records import run_of
from test_resume import SIGNAL_STEP, assert_finished_as_one_run, fake_run, in_process, lra, signal_at

from lra.config.errors import ConfigError
from lra.config.naming import SWEPT_KEYS_ENV, job_name, record_swept_keys, run_name, short_keys, swept_keys
from lra.job.loggers import RunIdentity
from lra.job.resolve import comparable_config
from lra.job.resume import POINTER_FILE, plan_run
from lra.job.run_identity import comparable_overrides, job_fingerprint
from lra.job.train import run
from lra.results.summary_json import read_summaries
from lra.results.summary_tables import format_table


def test_swept_keys_are_the_comma_and_range_overrides_less_task_attention_seed():
    overrides = ["task=listops,text", "attention=nystrom", "seed=0,1", "attention.num_landmarks=8,16"]
    assert swept_keys([*overrides, "task.lr=range(1,3)", "debug=fdr"]) == [
        "attention.num_landmarks",
        "task.lr",
    ]


def test_a_presets_own_sweep_names_its_jobs_unless_the_command_line_fixes_the_key(monkeypatch):
    monkeypatch.setenv(SWEPT_KEYS_ENV, "")
    record_swept_keys(["attention=mamba,s4d", "features=16"], {"task.lr": "1e-3,1e-2", "features": "16,32"})
    job = ["experiment=diagnostics_cpu", "attention=mamba", "features=16", "task.lr=1e-2"]
    assert job_name("mqar", "mamba", 0, job) == "mqar-mamba-lr=0.01-s0"


def test_job_names_carry_the_swept_options(monkeypatch):
    monkeypatch.setenv(SWEPT_KEYS_ENV, "")  # restored after the test: later runs sweep nothing
    record_swept_keys(["attention=nystrom,skyformer", "attention.num_landmarks=8,16", "experiment=skyformer"])
    job = ["attention=nystrom", "attention.num_landmarks=16", "experiment=skyformer", "data_root=/x"]
    assert job_name("listops", "nystrom", 0, job) == "listops-nystrom-num_landmarks=16-s0"
    assert run_name("text", "linformer", 2, {}) == "text-linformer-s2"  # a single run varies nothing
    assert short_keys(["model.dropout", "attention.dropout", "task.lr"]) == {
        "model.dropout": "model.dropout",
        "attention.dropout": "attention.dropout",
        "task.lr": "lr",
    }
    identity = RunIdentity("listops", "nystrom", 0, "abc", {"attention.num_landmarks": "16"}, 16)
    assert identity.name == "listops-nystrom-num_landmarks=16-s0"
    assert identity.tags == ["listops", "nystrom", "budget=16"]


def summary(attention: str, landmarks: str, status: str = "completed") -> dict:
    metrics = {"val/acc_best": 0.5, "test/acc": 0.25, "perf/train_time_s": 3.0}
    options = {"attention.num_landmarks": landmarks}
    return {"task": "listops", "attention": attention, "seed": 0, "status": status, "metrics": metrics,
            "options": options}  # fmt: skip


def test_the_sweep_table_has_a_column_per_swept_option():
    lines = format_table([summary("nystrom", "8"), summary("nystrom", "16", "failed")]).splitlines()
    assert lines[0].split()[:5] == ["task", "attention", "num_landmarks", "SPT", "seed"]
    assert [line.split()[:6] for line in lines[2:]] == [
        ["listops", "nystrom", "8", "-", "0", "completed"],
        ["listops", "nystrom", "16", "-", "0", "failed"],
    ]


def test_a_job_whose_own_folder_holds_its_unfinished_run_continues_there(data_root, tmp_path):
    """A requeued job (resume=null) or a re-run with hydra.run.dir set by hand (resume=auto)."""
    cfg = in_process(data_root)
    own = fake_run(tmp_path, "job", comparable_config(cfg), "interrupted", True, 100)
    for resume in ("null", "auto"):
        plan = plan_run(
            run_of(in_process(data_root, f"resume={resume}")), own, roots=[tmp_path / "elsewhere"]
        )
        assert (plan.directory, plan.checkpoint) == (own, own / "checkpoints" / "last.ckpt")
    other = fake_run(tmp_path, "other", {**comparable_config(cfg), "seed": 3}, "interrupted", True, 100)
    assert plan_run(run_of(cfg), other).checkpoint is None  # another job's folder: a fresh run


def test_resume_auto_skips_a_completed_job_and_refuses_a_changed_config(data_root, tmp_path):
    cfg = in_process(data_root, "resume=auto")
    config = comparable_config(cfg)
    job_overrides = ["task=listops", "attention=standard", "seed=0", "resume=auto"]
    done = fake_run(tmp_path / "multirun", "done", config, "completed", True, 100)
    plan = plan_run(run_of(cfg, job_overrides), tmp_path / "new", [tmp_path / "multirun"])
    assert plan.completed and plan.directory == done.resolve()

    edited = {**config, "task": {**config["task"], "lr": 9}}
    changed = fake_run(tmp_path / "old", "changed", edited, "completed", True, 100)
    run_file = json.loads((changed / "run.json").read_text())
    run_file["overrides"] = comparable_overrides(job_overrides)
    (changed / "run.json").write_text(json.dumps(run_file))
    with pytest.raises(ConfigError, match=r"had another config \(task\.lr differ") as refused:
        plan_run(run_of(cfg, job_overrides), tmp_path / "new", [tmp_path / "old"])
    assert "\n" not in str(refused.value) and "resume=null" in str(refused.value)
    assert job_fingerprint(config) == job_fingerprint(comparable_config(in_process(data_root, "threads=3")))


@pytest.mark.slow  # three sweeps of python -m lra in subprocesses
def test_a_restarted_sweep_skips_completed_jobs_continues_interrupted_ones_and_starts_the_rest(
    data_root, tmp_path
):
    command = ["-m", "attention=nystrom", "attention.num_landmarks=4,6,8", *tiny_data_overrides(data_root)]
    first = lra(command, tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    (sweep,) = (tmp_path / "multirun").iterdir()
    jobs = sorted(path for path in sweep.iterdir() if path.is_dir())
    assert [path.name for path in jobs] == [
        f"{n}_listops-nystrom-num_landmarks={m}-s0" for n, m in enumerate("468")
    ]
    assert "num_landmarks" in first.stdout.split("Sweep")[-1].splitlines()[1]
    done, interrupted, never_ran = jobs
    (interrupted / "summary.json").unlink()  # as after SIGKILL: the checkpoint of its last evaluation stays
    for path in sorted(never_ran.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    never_ran.rmdir()
    trained_once = (done / "checkpoints" / "last.ckpt").stat().st_mtime_ns

    again = lra([*command, "resume=auto"], tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    (restarted,) = set((tmp_path / "multirun").iterdir()) - {sweep}
    new_jobs = sorted(path for path in restarted.iterdir() if path.is_dir())
    pointers = [json.loads((job / POINTER_FILE).read_text()) for job in new_jobs[:2]]
    assert pointers[0]["continues"] == str(done) and pointers[0]["skipped_as_completed"]
    assert pointers[1]["continues"] == str(interrupted) and not pointers[1]["skipped_as_completed"]
    assert (done / "checkpoints" / "last.ckpt").stat().st_mtime_ns == trained_once  # nothing retrained
    assert json.loads((interrupted / "summary.json").read_text())["resumed_from"].endswith("last.ckpt")
    assert json.loads((new_jobs[2] / "summary.json").read_text())["resumed_from"] is None
    summaries = read_summaries(restarted)
    assert [(s["options"]["attention.num_landmarks"], s["status"]) for s in summaries] == [
        ("4", "completed"),
        ("6", "completed"),
        ("8", "completed"),
    ]
    assert "completed earlier" in again.stdout


@pytest.mark.slow  # two short trainings in this process
def test_a_run_folder_set_by_hand_continues_then_reports_its_completed_run(data_root, tmp_path, capsys):
    """``hydra.run.dir=FOLDER`` again with ``resume=auto``: the run goes on in FOLDER, then is skipped."""
    folder = tmp_path / "by-hand"
    stop = signal_at(SIGNAL_STEP, "SIGTERM", tmp_path / "sent")
    with pytest.raises(SystemExit):
        run(in_process(data_root, *stop), folder)
    resumed = run(in_process(data_root, *stop, "resume=auto"), folder, roots_elsewhere(tmp_path))
    assert resumed["status"] == "completed" and resumed["resumed_from"] == str(
        folder / "checkpoints" / "last.ckpt"
    )
    assert_finished_as_one_run(folder)
    trained = (folder / "checkpoints" / "last.ckpt").stat().st_mtime_ns
    again = run(in_process(data_root, *stop, "resume=auto"), folder, roots_elsewhere(tmp_path))
    assert again == resumed and (folder / "checkpoints" / "last.ckpt").stat().st_mtime_ns == trained
    assert "(completed earlier)" in capsys.readouterr().out


def roots_elsewhere(tmp_path: Path) -> list[Path]:
    """Output roots that do not hold the run: only the job's own folder can be found."""
    return [tmp_path / "outputs", tmp_path / "multirun"]
