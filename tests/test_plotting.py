"""The shared plotting pieces: one colour per attention, and the legibility check every plot test uses."""

from __future__ import annotations

from pathlib import Path

import attention_zoo
from lra.report.panels import variant_styles
from lra.report.runs import Run
from lra.results.plotting import (
    ATTENTION_COLORS,
    agg_pyplot,
    attention_color,
    natural_key,
    save_figure,
    text_problems,
)


def test_every_registered_attention_has_its_own_colour_in_every_variant():
    names = attention_zoo.available()
    colours = [attention_color(name) for name in names]
    assert len(set(colours)) == len(colours)
    assert (
        attention_color("nystrom (num_landmarks=32)")
        == attention_color("nystrom")
        == ATTENTION_COLORS["nystrom"]
    )
    assert attention_color("theirs") == attention_color("theirs")  # a plugin's colour is stable


def test_a_tidy_figure_has_no_problems_and_is_saved_as_png_and_svg(tmp_path):
    plt = agg_pyplot()
    fig, ax = plt.subplots(figsize=(4, 3), layout="constrained")
    ax.plot([1, 2, 3], [1, 4, 9], label="nystrom", color=attention_color("nystrom"))
    ax.set(title="ListOps, CPU", xlabel="steps", ylabel="accuracy (%)")
    ax.legend(loc="upper left")
    assert text_problems(fig) == []
    written = save_figure(fig, tmp_path / "tidy.png")
    assert [p.name for p in written] == ["tidy.png", "tidy.svg"] and all(
        p.stat().st_size > 0 for p in written
    )


def test_a_legend_off_the_image_crowded_log_ticks_and_piled_labels_are_found():
    plt = agg_pyplot()
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([300, 450], [1, 2], label="a label far too long to fit beside this small plot")
    fig.legend(loc="center left", bbox_to_anchor=(0.8, 0.5))
    ax.set_xscale("log")
    ax.set_xticks([300, 310, 320, 330], labels=["3×10²", "3.1×10²", "3.2×10²", "3.3×10²"])
    ax.annotate("nystrom", (350, 1.5))
    ax.annotate("skyformer", (350, 1.5))  # two markers' labels on top of each other
    problems = text_problems(fig)
    plt.close(fig)
    assert any("leaves the figure" in p for p in problems)
    assert any(p.startswith("x tick labels") and "overlap" in p for p in problems)
    assert any(p.startswith("labels 'nystrom' and 'skyformer' overlap") for p in problems)


def test_panel_titles_that_run_into_each_other_are_found():
    plt = agg_pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(6, 3), layout="constrained")
    for ax, task in zip(axes, ("listops", "pathfinder"), strict=True):
        ax.set_title(f"{task} (num_landmarks=16, dataset={task}-demo, generated data)")
    problems = text_problems(fig)
    plt.close(fig)
    assert any(p.startswith("titles 'listops (") and "overlap" in p for p in problems)


def test_a_label_nearer_another_marker_than_its_own_is_found_unless_a_leader_line_joins_them():
    plt = agg_pyplot()
    fig, ax = plt.subplots(figsize=(4, 3), layout="constrained")
    ax.scatter([0.0, 1.0], [0.0, 0.0], s=200)
    ax.set(xlim=(-1, 3), title="speed")
    ax.annotate("own at 0", (0.0, 0.0), xytext=(1.3, 0.0), va="center")  # beside the marker at 1
    problems = text_problems(fig)
    assert len(problems) == 1 and problems[0].startswith("label 'own at 0' sits nearer the marker at")
    ax.texts[0].remove()
    ax.annotate("own at 0", (0.0, 0.0), xytext=(1.3, 0.0), va="center", arrowprops={"arrowstyle": "-"})
    ax.annotate("own at 1", (1.0, 0.0), xytext=(1.0, 0.02), ha="center", va="bottom")  # above its marker
    assert text_problems(fig) == []
    plt.close(fig)


def test_labels_sort_with_their_numbers_as_numbers():
    labels = ["window (window=128)", "window (window=16)", "window (window=8)", "standard (lr=0.001)",
              "standard (lr=1e-05)"]  # fmt: skip
    assert sorted(labels, key=natural_key) == [
        "standard (lr=1e-05)", "standard (lr=0.001)",
        "window (window=8)", "window (window=16)", "window (window=128)",
    ]  # fmt: skip


def test_no_two_labels_of_a_figure_share_a_colour_and_marker():
    labels = [f"window (window={w}, position={p})" for w in (8, 16, 32, 64, 128, 256) for p in ("a", "r")]
    runs = [Run(Path("x"), "listops", "v", 0, "completed", "", {}, "", "", "", attention="window", label=name)
            for name in labels]  # fmt: skip
    styles = variant_styles(runs)
    assert len({(style.color, style.marker) for style in styles.values()}) == len(runs) == 12
