"""The recall diagnostics in the report (docs/diagnostics.md): Zoology's Figure 2 from the completed runs
of the recall tasks (``task.generator``); the tables are in ``lra.report.recall_tables``.

Every point, line and row stands for one configuration at its best tuning values (``lra.report.
recall_picks``: the learning rate with the best validation accuracy, the test accuracy there, averaged
over seeds). Causal and non-causal runs (``model.causal``) are separate settings, never in one panel or
table. A mixer's *line* joins its configurations that differ only along the state axis (``features``,
the attention's budget option, ``model.dim``); its label names what else differs from the other lines
(``lra.report.configurations``): another vocabulary, head count, step count or preset is another line.

``recall_vs_state``: Zoology's Figure 2 (Arora et al. 2023; HazyResearch/zoology
``zoology/analysis/paper/zoology_paper/zoology_figure2.py``): MQAR accuracy against the state size each
layer carries (``model/state_size``, log scale), one panel per setting, length and number of pairs, one
line per mixer in its attention colour and a marker of its own; a hollow marker is a pick at an edge of
its sweep; the dashed line is chance, one of the pairs' values picked at random (1 / pairs).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import attention_zoo
from lra.report.configurations import label_configurations
from lra.report.panels import SCRATCH_MARKERS, TITLE_SIZE, legend_below_panels, marker_of, panel_grid
from lra.report.paper_layouts import FigureSpec
from lra.report.recall_picks import Pick, picks, tuning_axes
from lra.report.runs import Run
from lra.results.plotting import log_axis, natural_key
from lra.results.summary_json import STATE_SIZE

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SETTINGS = {True: "causal", False: "non-causal"}
# The keys every recall label leaves out: the seed, the setting (model.causal) and what the task's
# generator fixes (shapes it resolves to); a table or panel names the cell itself.
ALWAYS_UNLABELLED = ("seed", "model.causal", "task.seq_len", "task.vocab_size", "task.num_classes")
STATE_AXIS = ("features", "model.dim")  # and the attention's budget option
MQAR_CELL = ("task.generator.input_seq_len", "task.generator.num_kv_pairs")  # a figure panel each
EDGE_NOTE = "hollow: the best rate is at an edge of its sweep"


def is_recall(run: Run) -> bool:
    return (run.config.get("task") or {}).get("generator") is not None


def apart(runs: Sequence[Run]) -> tuple[list[Run], list[Run]]:
    """(the LRA runs, the recall runs) of ``runs``: the LRA tables and papers' sections show only the
    first, the recall figure and tables only the second."""
    return [run for run in runs if not is_recall(run)], [run for run in runs if is_recall(run)]


def setting(run: Run) -> str:
    """``causal`` or ``non-causal``: the run's ``model.causal``."""
    return SETTINGS[bool((run.config.get("model") or {}).get("causal", False))]


def state_axis(run: Run) -> tuple[str, ...]:
    """The keys along which a mixer's line runs: ``features``, the width and its budget option."""
    known = run.attention in attention_zoo.available()
    option = attention_zoo.spec(run.attention).budget_option if known else None
    return (*STATE_AXIS, *([f"attention.{option}"] if option else []))


def steps(run: Run) -> int | None:
    """The steps it trained: ``train/steps`` as recorded, else ``trainer.max_steps``."""
    recorded = run.metrics.get("train/steps", run.settings.get("trainer.max_steps"))
    return None if recorded is None else int(recorded)


def labels(chosen: Sequence[Pick], unlabelled: Callable[[Run], Sequence[str]]) -> dict[int, str]:
    """id(pick) -> its label: the attention and what differs between the picks of its setting and preset,
    less ``unlabelled(run)`` (prefixes), the tuning axes and ``ALWAYS_UNLABELLED``; where a setting holds
    picks of several presets, each label names its preset first (``experiment=mad``, ``no preset``),
    so that runs of two presets never read alike and the preset stands for all it sets."""
    stripped = []
    for pick in chosen:
        run = pick.run
        skipped = (*ALWAYS_UNLABELLED, *tuning_axes(run), *unlabelled(run))
        if setting(run) == "causal":
            skipped += ("attention.bidirectional",)
        kept = {key: value for key, value in run.settings.items() if not key.startswith(skipped)}
        stripped.append(replace(
            run, settings=kept, configuration=repr(sorted(kept.items(), key=str)), protocol=preset_name(run),
            label_keys=tuple(key for key in run.label_keys if not key.startswith(skipped)),
            task=f"recall, {setting(run)}",  # one labelling a setting: a mixer keeps its name across tasks
        ))  # fmt: skip
    presets: dict[str, set[str]] = defaultdict(set)
    for run in stripped:
        presets[run.task].add(run.protocol)
    return {
        id(pick): with_preset(run) if len(presets[run.task]) > 1 else run.label
        for pick, run in zip(chosen, label_configurations(stripped), strict=True)
    }


def preset_name(run: Run) -> str:
    return f"experiment={run.preset}" if run.preset else "no preset"


def with_preset(run: Run) -> str:
    """``run.label`` with its preset (``Run.protocol`` here) as its first part."""
    name, _, rest = run.label.partition(" (")
    return f"{name} ({run.protocol}{', ' + rest if rest else ')'}"


def mqar_picks(runs: Sequence[Run]) -> list[tuple[Pick, str]]:
    """Each MQAR configuration that records a state size, picked and labelled as a line (module
    docstring), sorted by setting, cell, label and state size."""
    chosen = [pick for pick in picks(runs) if pick.run.task == "mqar" and pick.run.value(STATE_SIZE)]
    named = labels(chosen, lambda run: (*state_axis(run), *MQAR_CELL))
    return sorted(((pick, named[id(pick)]) for pick in chosen), key=lambda item: (*panel(item[0]),
                  natural_key(item[1]), item[0].run.value(STATE_SIZE)))  # fmt: skip


def panel(pick: Pick) -> tuple[bool, int, int]:
    """(non-causal, length, pairs): the figure panel of an MQAR pick, causal first."""
    generator = pick.run.config["task"]["generator"]
    return (setting(pick.run) != "causal", generator["input_seq_len"], generator["num_kv_pairs"])


def panel_title(key: tuple[bool, int, int], members: Sequence[Pick]) -> str:
    """``causal: length 64, 8 pairs, 1200 steps`` (the steps where every line of the panel shares them)."""
    counts = {steps(pick.run) for pick in members}
    trained = f", {counts.pop()} steps" if len(counts) == 1 and None not in counts else ", steps: see labels"
    return f"{SETTINGS[not key[0]]}: length {key[1]}, {key[2]} pairs{trained}"


def line_styles(labelled: Sequence[tuple[Pick, str]]) -> dict[str, tuple[str, str]]:
    """label -> (colour, marker): its attention's colour, and a marker of its own among that attention's
    labels, the same in every panel. The markers start at a different shape for each attention (in name
    order), so that mixers whose points coincide (many at 100%) still show apart."""
    by_attention: dict[str, list[str]] = defaultdict(list)
    for pick, label in labelled:
        if label not in by_attention[pick.run.attention]:
            by_attention[pick.run.attention].append(label)
    styles = {}
    for start, attention in enumerate(sorted(by_attention)):
        for rank, label in enumerate(sorted(by_attention[attention], key=natural_key)):
            color, _ = marker_of(attention, rank)
            styles[label] = (color, SCRATCH_MARKERS[(start + rank) % len(SCRATCH_MARKERS)])
    return styles


def recall_vs_state(runs: Sequence[Run]) -> Figure | None:
    """Zoology's Figure 2 of the MQAR runs that record a state size (module docstring); None when there
    are none. One legend below the panels names every line once."""
    labelled = mqar_picks(runs)
    if not labelled:
        return None
    panels: dict[tuple, list[tuple[Pick, str]]] = defaultdict(list)
    for pick, label in labelled:
        panels[panel(pick)].append((pick, label))
    styles = line_styles(labelled)
    fig, axes = panel_grid(len(panels), "MQAR accuracy against the state size per layer (Zoology, Figure 2)")
    handles: dict[str, object] = {}
    for key, ax in zip(sorted(panels), axes, strict=True):
        lines: dict[str, list[Pick]] = defaultdict(list)
        for pick, label in panels[key]:
            lines[label].append(pick)
        for label, members in lines.items():
            color, marker = styles[label]
            sizes = [pick.run.value(STATE_SIZE) for pick in members]
            accuracies = [100 * pick.test()[0] for pick in members]
            (handle,) = ax.plot(sizes, accuracies, color=color, marker=marker, markersize=6, label=label)
            hollow = [(s, a) for s, a, pick in zip(sizes, accuracies, members, strict=True) if pick.edge()]
            if hollow:  # an edge: the marker's face left white
                ax.plot(*zip(*hollow, strict=True), linestyle="", marker=marker, markersize=6,
                        markerfacecolor="white", markeredgecolor=color, zorder=3)  # fmt: skip
            handles.setdefault(label, handle)
        ax.axhline(100 / key[2], color="0.4", linestyle="--", linewidth=1)
        ax.set_title(panel_title(key, [pick for pick, _ in panels[key]]), fontsize=TITLE_SIZE)
        ax.set(xlabel="state size per layer (numbers)", ylabel="test accuracy (%)", ylim=(-3, 103))
        log_axis(ax, "x")
        ax.grid(True, which="both", alpha=0.3)
    chance, edge = proxies(fig)
    legend_below_panels(fig, axes, handles, {"chance (1 / pairs)": chance, EDGE_NOTE: edge})
    return fig


def proxies(fig: Figure) -> tuple[object, object]:
    """Legend entries for the chance line and the hollow edge marker."""
    from matplotlib.lines import Line2D

    chance = Line2D([], [], color="0.4", linestyle="--", linewidth=1)
    edge = Line2D([], [], color="0.3", linestyle="", marker="o", markerfacecolor="white")
    return chance, edge


RECALL_VS_STATE = FigureSpec(
    "recall_vs_state",
    "## Recall against state size (Zoology, Figure 2)",
    lambda report: recall_vs_state(report.recall),
    "No completed MQAR run records a state size.",
    lambda report: (
        "One panel per setting (causal or non-causal), length and number of pairs, with its steps; one "
        "line per mixer over its state sizes (`model/state_size`). Each point is one configuration at "
        "the learning rate (the preset's tuning axes) with the best validation accuracy, and its test "
        "accuracy there, the mean over seeds (Zoology's selection); a hollow marker is a best at the "
        "highest or lowest rate swept, or from one rate. Every point's figures: the MQAR table below."
    ),
)
