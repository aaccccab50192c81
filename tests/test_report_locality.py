"""The locality figure and table over synthetic sweeps: every window drawn, text inside the canvas, and
the locality lengths of a constructed case."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from helpers.report_summaries import write_summary

from lra.report.cli import main
from lra.report.locality import locality_curves, locality_figure, locality_table
from lra.report.runs import find_runs, latest_per_seed
from lra.results.plotting import save_figure, text_problems

BASE = {"task": {"name": "listops", "seq_len": 64}, "model": {"position": "absolute"}, "trainer": {}}
LISTOPS_DATA = {"majority_share": {"test": 0.1}}
# window -> test accuracies of seeds 0, 1, 2: within the 95% interval from 32, within 1 point from 64
LISTOPS_WINDOWS = {
    8: [0.30, 0.31, 0.32],
    16: [0.45, 0.46, 0.47],
    32: [0.48, 0.48, 0.48],
    64: [0.515, 0.515, 0.515],
    128: [0.52, 0.53, 0.53],
}
LISTOPS_FULL = [0.50, 0.52, 0.54]  # mean 52, 95% interval 52 ± 4.97


def config(task: str, seq_len: int, attention: str, window: int | None, seed: int, **model) -> dict:
    chosen = copy.deepcopy(BASE) | {"seed": seed}
    chosen["task"] = {"name": task, "seq_len": seq_len}
    chosen["model"] |= model
    chosen["attention"] = {"name": attention} | ({"window": window} if window else {})
    return chosen


def write_sweep(root: Path, task: str, seq_len: int, windows: dict, full: list, data: dict, **model) -> None:
    for window, accuracies in [*windows.items(), (None, full)]:
        attention = "standard" if window is None else "window"
        for seed, acc in enumerate(accuracies):
            write_summary(
                root / f"{task}-{window}-{model}", task, attention, seed, acc,
                config=config(task, seq_len, attention, window, seed, **model), data=data, schema=3,
            )  # fmt: skip


@pytest.fixture
def runs_root(tmp_path: Path) -> Path:
    root = tmp_path / "multirun"
    write_sweep(root, "listops", 64, LISTOPS_WINDOWS, LISTOPS_FULL, LISTOPS_DATA)
    text = {2**k: [0.5 + 0.03 * k] for k in range(3, 11)}  # 8 to 1024, one seed each
    write_sweep(root, "text", 512, text, [0.8], {"majority_share": {"test": 0.5}})
    rope = {8: [0.2, 0.25], 128: [0.6, 0.62]}
    write_sweep(root, "listops", 64, rope, [0.6, 0.61], LISTOPS_DATA, position="rope")
    other = config("listops", 64, "nystrom", None, 0)
    write_summary(root / "other", "listops", "nystrom", 0, 0.4, config=other)
    return root


def test_the_locality_lengths_of_a_constructed_sweep(runs_root: Path):
    curves = {curve.title: curve for curve in locality_curves(latest_per_seed(find_runs([runs_root])))}
    assert set(curves) == {"listops (position=absolute)", "listops (position=rope)", "text"}
    listops = curves["listops (position=absolute)"]
    assert list(listops.windows) == [8, 16, 32, 64, 128]
    assert listops.full.mean == pytest.approx(52.0) and listops.full.ci[0] == pytest.approx(47.03, abs=0.01)
    assert listops.chance == pytest.approx(10.0)
    assert (listops.within_point(), listops.within_interval()) == (64, 32)
    text = curves["text"]  # one seed of standard: no interval
    assert (text.within_point(), text.within_interval()) == (1024, None)
    assert curves["listops (position=rope)"].within_point() == 128


def test_the_table_gives_each_tasks_locality_lengths(runs_root: Path):
    table = locality_table(latest_per_seed(find_runs([runs_root])))
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ") for line in table.splitlines()[2:]}
    assert rows["listops (position=absolute)"][3:5] == ["64", "32"]
    assert rows["text"][3:5] == ["1024", "—"]
    assert rows["text"][5] == "8 to 1024 (8; seeds 1) |"


def test_the_figure_draws_every_window_with_its_text_inside(runs_root: Path, tmp_path: Path):
    fig = locality_figure(latest_per_seed(find_runs([runs_root])))
    drawn = {ax.get_title(): ax for ax in fig.axes if ax.get_visible()}
    assert set(drawn) == {"listops (position=absolute)", "listops (position=rope)", "text"}
    points = {title: sorted(ax.lines[0].get_xdata()) for title, ax in drawn.items()}
    assert points["text"] == [2**k for k in range(3, 11)] and points["listops (position=rope)"] == [8, 128]
    assert text_problems(fig) == []
    save_figure(fig, tmp_path / "locality.png", formats=(".png",))


def test_the_report_has_the_figure_and_table_only_with_window_runs(runs_root: Path, tmp_path: Path):
    out = tmp_path / "report"
    assert main(["--runs", str(runs_root), "--out", str(out)]) == 0
    text = (out / "lra_table.md").read_text()
    assert (out / "lra_locality.png").is_file() and "| text | 80.00 (1) | 50.00 | 1024 | — |" in text
    plain = tmp_path / "plain"
    write_summary(plain, "listops", "standard", 0, 0.5, config=config("listops", 64, "standard", None, 0))
    assert main(["--runs", str(plain), "--out", str(tmp_path / "plain_report")]) == 0
    assert "how long range" not in (tmp_path / "plain_report" / "lra_table.md").read_text()


def write_preset_sweep(root: Path, preset: str, model: dict, full: list[float], share: float) -> None:
    """A sweep under ``preset`` whose configs differ from the other preset's in many keys."""
    for window, accuracies in [(8, [0.11, 0.12]), (128, [0.12, 0.13]), (None, full)]:
        attention = "standard" if window is None else "window"
        for seed, acc in enumerate(accuracies):
            chosen = config("listops", 64, attention, window, seed, **model)
            chosen["trainer"] = {"max_steps": 30, "log_every_n_steps": 25, "accelerator": "cpu"}
            chosen["task"] |= {"eval_every": 15, "lr": 0.001, "warmup_steps": 200}
            write_summary(
                root / f"{preset}-{window}", "listops", attention, seed, acc, config=chosen, schema=3,
                data={"set": "listops-demo", "source": "generator", "majority_share": {"test": share}},
                preset=preset, overrides=["trainer.max_steps"],
            )  # fmt: skip


def test_panels_of_two_presets_name_the_preset_not_every_key_and_fit(tmp_path: Path):
    write_preset_sweep(tmp_path, "locality_demo", {"dim": 64}, [0.11, 0.12], 0.131)
    write_preset_sweep(tmp_path, "locality", {"dim": 128, "position": "rope"}, [0.5, 0.52], 0.131)
    curves = locality_curves(latest_per_seed(find_runs([tmp_path])))
    assert sorted(curve.title for curve in curves) == [
        "listops (dataset=listops-demo, generated data,\nexperiment=locality)",
        "listops (dataset=listops-demo, generated data,\nexperiment=locality_demo)",
    ]
    figure = locality_figure(latest_per_seed(find_runs([tmp_path])))
    assert text_problems(figure) == []


def test_a_curve_whose_full_attention_is_at_chance_has_no_locality_length(tmp_path: Path):
    write_preset_sweep(tmp_path, "locality_demo", {"dim": 64}, [0.108, 0.108], 0.131)
    [curve] = locality_curves(latest_per_seed(find_runs([tmp_path])))
    assert curve.at_chance() and curve.within_point() is None and curve.within_interval() is None
    table = locality_table(latest_per_seed(find_runs([tmp_path])))
    assert "— (full attention at chance)" in table
