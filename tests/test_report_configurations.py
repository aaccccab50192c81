"""The report gives every configuration its row: an lr sweep, a steps sweep, a DDP run beside
single-process ones, a wider model, a rerun of one seed and an SPT pair, all of one task and data set.
Only the rerun is superseded; each label names exactly the options in which it differs."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from conftest import compose_config
from helpers.report_summaries import masked_pretrain, write_curve, write_summary
from omegaconf import OmegaConf

from lra.report.cli import main
from lra.report.compare import CompareError, compare_lines
from lra.report.configurations import label_configurations
from lra.report.curves import read_curves
from lra.report.document import split_by_protocol
from lra.report.figure3 import speed_accuracy_memory
from lra.report.figures import accuracy_vs_time, validation_curves
from lra.report.runs import find_runs, latest_and_superseded
from lra.report.wandb_workspace import swept_config_keys
from lra.results.plotting import agg_pyplot, text_problems

DEMO_DATA = {"set": "listops-demo", "source": "generator", "majority_share": {"test": 0.09}}
MARKS = "dataset=listops-demo, generated data"
# label (without the data marks) -> the test accuracy of its runs, one per seed
EXPECTED = {
    "standard": [0.152],  # lr=1e-3: seed 0 ran twice; the rerun counts
    "standard (lr=1e-05)": [0.108],
    "standard (dim=128)": [0.171],
    "standard (SPT)": [0.19],
    "nystrom (num_landmarks=16, max_steps=40)": [0.12, 0.125],  # the demo's features=16
    "nystrom (num_landmarks=16, max_steps=400)": [0.16, 0.165],
    "nystrom (num_landmarks=16, devices=2, max_steps=400, strategy=ddp)": [0.158],
}


def demo_config(*overrides: str) -> dict:
    return OmegaConf.to_container(compose_config(["experiment=demo", *overrides]), resolve=True)


def changed(config: dict, **dotted: object) -> dict:
    """``config`` with each ``section__key=value`` set (``trainer__max_steps=40``)."""
    config = copy.deepcopy(config)
    for key, value in dotted.items():
        section, name = key.split("__")
        config[section][name] = value
    return config


def write_run(root: Path, name: str, config: dict, seed: int, acc: float, finished: str, **extra) -> None:
    config = changed(config, **{}) | {"seed": seed}
    run_dir = write_summary(
        root / name, "listops", config["attention"]["name"], seed, acc, config=config, data=DEMO_DATA,
        schema=3, finished=finished, metrics={"perf/step_ms": 40.0 + 10 * seed}, train_time_s=60.0, **extra,
    )  # fmt: skip
    write_curve(run_dir, [(20.0, 0.13), (40.0, acc - 0.01), (60.0, acc)])


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mixed")
    standard, nystrom = demo_config("attention=standard"), demo_config("attention=nystrom")
    spt = demo_config("attention=standard", "pretrain=masked")
    write_run(root, "lr-sweep/0", standard, 0, 0.151, "2026-01-01T10:00:00")
    write_run(root, "lr-sweep/1", changed(standard, task__lr=1e-5), 0, 0.108, "2026-01-01T10:01:00")
    write_run(root, "rerun", standard, 0, 0.152, "2026-01-02T10:00:00")
    write_run(root, "wide", changed(standard, model__dim=128), 0, 0.171, "2026-01-01T11:00:00")
    write_run(root, "spt", spt, 0, 0.19, "2026-01-01T12:00:00", pretrain=masked_pretrain())
    for seed in (0, 1):
        short = changed(nystrom, trainer__max_steps=40)
        write_run(root, f"steps/40-{seed}", short, seed, 0.12 + seed / 200, "2026-01-01T13:00:00")
        longer = changed(nystrom, trainer__max_steps=400)
        write_run(root, f"steps/400-{seed}", longer, seed, 0.16 + seed / 200, "2026-01-01T14:00:00")
    ddp = changed(nystrom, trainer__max_steps=400, trainer__devices=2, trainer__strategy="ddp")
    write_run(
        root, "ddp", changed(ddp, logger__wandb={"project": "elsewhere"}), 0, 0.158, "2026-01-01T15:00:00"
    )
    return root


def labelled(root: Path) -> list:
    return split_by_protocol(label_configurations(find_runs([root])))


def test_every_configuration_is_its_own_row_and_only_the_rerun_is_superseded(mixed: Path):
    completed, superseded = latest_and_superseded(labelled(mixed))
    by_label = {}
    for run in completed:
        by_label.setdefault(run.label, []).append(run)
    assert {
        label: sorted(r.metrics["test/acc"] for r in runs) for label, runs in by_label.items()
    } == EXPECTED
    assert all(run.variant == run.label.replace(")", f", {MARKS})") if "(" in run.label
               else run.variant == f"{run.label} ({MARKS})" for run in completed if not run.spt)  # fmt: skip
    assert [(old.path.parent.parent.name, new.path.parent.parent.name) for old, new in superseded] == [
        ("0", "rerun")
    ]
    spt = next(run for run in completed if run.spt)
    assert spt.scratch_variant == f"standard ({MARKS})"  # the SPT pair: the default standard row


def test_a_two_point_sweep_names_both_values(tmp_path: Path):
    standard = demo_config("attention=standard")
    write_run(tmp_path, "a", changed(standard, task__lr=1e-3), 0, 0.151, "2026-01-01T10:00:00")
    write_run(tmp_path, "b", changed(standard, task__lr=1e-5), 0, 0.108, "2026-01-01T10:01:00")
    assert sorted(run.label for run in labelled(tmp_path)) == ["standard (lr=0.001)", "standard (lr=1e-05)"]


def test_the_report_counts_rows_and_superseded_runs_and_names_them(mixed: Path, tmp_path: Path):
    out = tmp_path / "report"
    assert main(["--runs", str(mixed), "--out", str(out)]) == 0
    text = (out / "lra_table.md").read_text()
    assert "from 10 summary.json file(s): 9 completed run(s) counted" in text
    assert "in 7 row(s) (7 configuration(s) × task); 1 superseded by a rerun" in text
    assert f"listops ({MARKS}): dim=64, lr=0.001, devices=1, max_steps=2000, strategy=auto" in text
    table = text.split("## Test accuracy (%)")[1].split("\n## ")[0]
    rows = [
        line.split("|")[1].strip() for line in table.splitlines() if line.startswith("| ") and "—" in line
    ]
    assert sorted(rows) == sorted(
        label.replace(")", f", {MARKS})") if "(" in label and "SPT" not in label
        else f"standard ({MARKS}, SPT)" if "SPT" in label else f"{label} ({MARKS})"
        for label in EXPECTED
    )  # fmt: skip
    superseded = text.split("## Runs superseded by a rerun")[1].split("\n## ")[0]
    assert f"{mixed / 'lr-sweep' / '0'}/" in superseded and f"{mixed / 'rerun'}/" in superseded


def test_compare_pairs_configurations_and_lists_them_when_a_name_is_ambiguous(mixed: Path):
    runs = labelled(mixed)
    with pytest.raises(
        CompareError,
        match=r"'nystrom' ran as several variants; name one: nystrom \(num_landmarks=16, devices",
    ):
        compare_lines(runs, "nystrom", "standard")
    (line,) = compare_lines(runs, *(f"nystrom (num_landmarks=16, max_steps={n})" for n in (400, 40)))
    assert "nystrom (num_landmarks=16, max_steps=400) − nystrom (num_landmarks=16, max_steps=40)" in line
    assert line.endswith("+4.00 [4.00, 4.00] over 2 seeds")


def test_every_figure_draws_every_row_with_its_text_inside_and_wandb_groups_by_the_labels(mixed: Path):
    completed, _ = latest_and_superseded(labelled(mixed))
    curves, _ = read_curves(completed)
    for figure in (accuracy_vs_time(completed), validation_curves(curves),
                   speed_accuracy_memory(completed, per_task=True)):  # fmt: skip
        legends = [text for legend in figure.legends for text in legend.get_texts()]
        beside = [text for ax in figure.axes for text in ax.texts]  # labels placed beside their markers
        assert set(EXPECTED) <= {text.get_text() for text in legends + beside}
        assert text_problems(figure) == []
        agg_pyplot().close(figure)
    assert set(swept_config_keys(completed)) == {
        "attention.num_landmarks", "model.dim", "task.lr", "trainer.devices", "trainer.max_steps",
        "trainer.strategy",
    }  # fmt: skip


def test_a_label_names_what_its_command_line_set_and_a_joining_run_moves_no_other_label(tmp_path: Path):
    nystrom = demo_config("attention=nystrom")
    for lr in (1e-3, 1e-4):
        config = changed(nystrom, task__lr=lr)
        write_run(tmp_path, f"lr-{lr}", config, 0, 0.15, "2026-01-01T10:00:00", overrides=["task.lr"])
    before = sorted(run.label for run in labelled(tmp_path))
    assert before == ["nystrom (num_landmarks=16, lr=0.0001)", "nystrom (num_landmarks=16, lr=0.001)"]
    wide = changed(nystrom, model__dim=32)
    write_run(tmp_path, "wide", wide, 0, 0.1, "2026-01-01T11:00:00", overrides=["model.dim"])
    assert sorted(run.label for run in labelled(tmp_path)) == sorted(
        [*before, "nystrom (num_landmarks=16, dim=32)"]
    )


def test_compare_takes_a_label_as_the_table_prints_it_and_ignored_keys_name_nothing(tmp_path: Path):
    nystrom, standard = demo_config("attention=nystrom"), demo_config("attention=standard")
    for seed in (0, 1):  # the same jobs but for how often they log and the accelerator they named
        quiet = changed(nystrom, trainer__log_every_n_steps=50, trainer__accelerator="cpu")
        write_run(
            tmp_path, f"n{seed}", nystrom if seed else quiet, seed, 0.15 + seed / 100, "2026-01-01T10:00"
        )
        write_run(tmp_path, f"s{seed}", standard, seed, 0.12, "2026-01-01T10:00:00")
    runs = labelled(tmp_path)
    assert sorted({run.variant for run in runs}) == [
        f"nystrom (num_landmarks=16, {MARKS})",
        f"standard ({MARKS})",
    ]
    (line,) = compare_lines(runs, f"nystrom (num_landmarks=16, {MARKS})", f"standard ({MARKS})")
    assert line.endswith("over 2 seeds")


def test_a_label_never_prints_an_unresolved_interpolation(tmp_path: Path):
    composed = {"attention": {"name": "standard", "attention_dropout": "${protocol.attention_dropout}"},
                "protocol": {"attention_dropout": 0.1}, "model": {"dim": "${lra.nowhere:64}"}}  # fmt: skip
    write_summary(
        tmp_path, "listops", "standard", 0, None, status="failed", error="ValueError: x", config=composed
    )
    [run] = find_runs([tmp_path])
    assert run.variant == "standard (attention_dropout=0.1)" and "${" not in repr(run.settings)
