"""The recall diagnostics' tables in the report (docs/diagnostics.md): every point of the MQAR figure,
MAD's scores, and every recall run with its tuning values.

- ``mqar_table``: a row per MQAR configuration (each point of ``lra.report.recall.recall_vs_state``):
  its state size, its test accuracy at the picked rate (mean ± std over seeds), the rate, how many
  rates it was picked from and whether the pick is at an edge of the sweep.
- ``mad_table``: MAD's score (Poli et al. 2024; athms/mad-lab ``mad/analysis.py`` L120-201): per
  configuration and task, the mean over MAD's difficulty levels (``data_prep.recall.MAD_LEVELS``) of
  each level's best pick, the levels named. A pick that is not one of MAD's levels (another length, a
  fresh training set: the CPU tier's cells) is never averaged: its cell shows it alone, with how its
  task differs from MAD's baseline.
- ``mad_picks_table``: a row per pick behind MAD's table, with its rate, sweep and edge flag.
- ``runs_table``: the appendix, every recall run with its tuning values, seed and accuracies.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence

from data_prep.recall.mad_levels import MAD_LEVELS
from lra.provenance import markdown_table
from lra.report.paper_layouts import ReportInput
from lra.report.recall import SETTINGS, labels, mqar_picks, setting, state_axis, steps
from lra.report.recall_picks import TEST, VALIDATION, Pick, picks, tuning_values
from lra.report.runs import Run
from lra.results.summary_json import STATE_SIZE

MAD_TASKS = tuple(MAD_LEVELS)
TRAIN_EXAMPLES = "num_train_examples"  # MAD's name for the training set's size (task.train_examples)
LEVEL_KEYS = ("task.generator.", "task.train_examples", "task.training_set", "task.name", "task.dataset")
EDGE_MARK = "†"


def percent(mean: float, std: float = 0.0, seeds: int = 1) -> str:
    """``97.85`` or ``97.85 ± 0.40 (3)``: an accuracy in %, with its spread over seeds."""
    return f"{100 * mean:.2f}" + (f" ± {100 * std:.2f} ({seeds})" if seeds > 1 else "")


def state_text(run: Run) -> str:
    """``d_state=32`` or ``dim=128``: where the run sits on its state axis."""
    axis = state_axis(run)
    budget = [key for key in axis[2:] if key in run.settings]
    key = budget[0] if budget else "model.dim"
    return f"{key.rsplit('.', 1)[-1]}={run.settings.get(key)}"


def mqar_table(runs: Sequence[Run]) -> str:
    """A row per MQAR configuration that records a state size ("" when none ran)."""
    rows = []
    for pick, label in mqar_picks(runs):
        run, (mean, std, seeds) = pick.run, pick.test()
        generator = run.config["task"]["generator"]
        cell = f"{generator['input_seq_len']} tokens, {generator['num_kv_pairs']} pairs, {steps(run)} steps"
        rows.append([
            setting(run), cell, label, state_text(run), f"{int(run.value(STATE_SIZE)):,}",
            percent(mean, std, seeds), percent(pick.validation()), pick.picked_text(),
            pick.tried_text(), pick.edge() and f"{EDGE_MARK} {pick.edge()}",
        ])  # fmt: skip
    headers = ["setting", "cell", "mixer", "state axis", "state size", "test acc (%)", "val acc (%)",
               "picked", "from", "edge"]  # fmt: skip
    return markdown_table(headers, rows) if rows else ""


def level_spec(run: Run) -> dict:
    """The run's values of the keys MAD's levels of its task set (generator options and the training
    set's size)."""
    generator, task = run.config["task"]["generator"], run.config["task"]
    keys = MAD_LEVELS[run.task]["baseline"]
    return {key: task.get("train_examples") if key == TRAIN_EXAMPLES else generator.get(key) for key in keys}


def level_name(run: Run) -> str | None:
    """``baseline`` or ``vocab_size=32``: which of MAD's levels the run is, or None for none (MAD's
    sets are fixed: a fresh training set is no level)."""
    if run.config["task"].get("training_set", "fixed") != "fixed":
        return None
    spec, baseline = level_spec(run), MAD_LEVELS[run.task]["baseline"]
    for key, values in {None: [None], **MAD_LEVELS[run.task]["changes"]}.items():
        for value in values:
            if spec == (baseline if key is None else {**baseline, key: value}):
                return "baseline" if key is None else f"{key}={value}"
    return None


def off_baseline(run: Run) -> tuple[str, ...]:
    """How a pick that is no level differs from MAD's baseline: (``seq_len=64``, ``fresh batches``)."""
    baseline = MAD_LEVELS[run.task]["baseline"]
    changed = [f"{key}={value}" for key, value in level_spec(run).items() if value != baseline[key]]
    fresh = ["fresh batches"] if run.config["task"].get("training_set", "fixed") != "fixed" else []
    return tuple([*changed, *fresh]) or ("baseline shape",)


def shared_parts(details: Sequence[tuple[str, ...]]) -> list[str]:
    """The parts that every one of ``details`` holds, in the first one's order (none for no details)."""
    return [part for part in details[0] if all(part in each for each in details[1:])] if details else []


def mad_picks(runs: Sequence[Run]) -> list[tuple[Pick, str]]:
    """Each pick of a MAD task with its label (the attention and what differs, less the level's keys)."""
    chosen = [pick for pick in picks(runs) if pick.run.task in MAD_TASKS]
    named = labels(chosen, lambda run: LEVEL_KEYS)
    return [(pick, named[id(pick)]) for pick in chosen]


def mad_cells(
    labelled: Sequence[tuple[Pick, str]],
) -> dict[tuple[str, str, str], dict[str, tuple[str, tuple]]]:
    """(setting, mixer, kind) -> task -> its cell as (value, details): the score over MAD's levels (kind
    ``MAD levels``; the detail names the levels), or a pick that is no level, alone (kind ``not MAD's
    levels``; the detail says how it differs from MAD's baseline; a second such pick of one task and
    mixer gets a row of its own)."""
    levels: dict[tuple[str, str, str], list[Pick]] = defaultdict(list)
    cells: dict[tuple[str, str, str], dict[str, tuple[str, tuple]]] = defaultdict(dict)
    for pick, label in labelled:
        run = pick.run
        if level_name(run) is not None:
            levels[(setting(run), label, run.task)].append(pick)
            continue
        kind, rank = "not MAD's levels", 1
        while run.task in cells[(setting(run), label, kind)]:
            rank += 1
            kind = f"not MAD's levels ({rank})"
        mean, std, seeds = pick.test()
        edge = EDGE_MARK if pick.edge() else ""
        cells[(setting(run), label, kind)][run.task] = (
            f"{percent(mean, std, seeds)}{edge}",
            off_baseline(run),
        )
    for (where, label, task), members in levels.items():
        score = statistics.fmean(pick.test()[0] for pick in members)
        names = ", ".join(sorted(level_name(pick.run) for pick in members))
        edge = EDGE_MARK if any(pick.edge() for pick in members) else ""
        cells[(where, label, "MAD levels")][task] = (
            f"{100 * score:.1f}{edge}",
            (f"{len(members)}: {names}",),
        )
    return cells


def mad_row(label: str, kind: str, row: dict[str, tuple[str, tuple]]) -> list[str]:
    """A table row: each cell ``value (details)``; in a row of picks that are no level, the differences
    from MAD's baseline every cell shares are said once, in its kind (``not MAD's levels: fresh
    batches``)."""
    shared = shared_parts([details for _, details in row.values()]) if kind.startswith("not MAD") else []
    kind = f"{kind}: {', '.join(shared)}" if shared else kind
    shown = {}
    for task, (value, details) in row.items():
        rest = [part for part in details if part not in shared]
        shown[task] = f"{value} ({', '.join(rest)})" if rest else value
    return [label, kind, *(shown.get(task, "—") for task in MAD_TASKS)]


def mad_table(labelled: Sequence[tuple[Pick, str]]) -> str:
    """MAD's table per setting (markdown) of ``mad_picks``: a row per mixer and kind, a column per task
    ("" when no MAD task ran)."""
    cells = mad_cells(labelled)
    blocks = []
    for name in SETTINGS.values():
        rows = [
            mad_row(label, kind, row) for (where, label, kind), row in sorted(cells.items()) if where == name
        ]
        if rows:
            blocks.append(f"**{name}**\n\n" + markdown_table(["mixer", "cells", *MAD_TASKS], rows))
    return "\n\n".join(blocks)


def mad_picks_table(labelled: Sequence[tuple[Pick, str]]) -> str:
    """A row per pick of ``mad_picks``, behind MAD's table ("" when no MAD task ran): its level (or how
    it differs from MAD's baseline, less what every such pick shares: that is said once, above the
    table), state size, test and validation accuracy, the tuning values picked, how many were swept and
    its edge flag."""
    if not labelled:
        return ""
    off = {id(pick): off_baseline(pick.run) for pick, _ in labelled if level_name(pick.run) is None}
    shared = shared_parts(list(off.values()))
    rows = []
    for pick, label in labelled:
        run, (mean, std, seeds) = pick.run, pick.test()
        size = run.value(STATE_SIZE)
        rest = ", ".join(part for part in off.get(id(pick), ()) if part not in shared)
        rows.append([
            setting(run), run.task, level_name(run) or ("not a level" + (f": {rest}" if rest else "")),
            label, f"{int(size):,}" if size else "—", percent(mean, std, seeds),
            percent(pick.validation()), pick.picked_text(), pick.tried_text(),
            pick.edge() and f"{EDGE_MARK} {pick.edge()}",
        ])  # fmt: skip
    headers = ["setting", "task", "level", "mixer", "state size", "test acc (%)", "val acc (%)", "picked",
               "from", "edge"]  # fmt: skip
    order = {task: index for index, task in enumerate(MAD_TASKS)}
    table = markdown_table(headers, sorted(rows, key=lambda row: (row[0], order[row[1]], *row[2:4])))
    said = f"Every pick here that is no MAD level has {', '.join(shared)}; `level` names what else differs."
    return f"{said}\n\n{table}" if shared else table


def runs_table(runs: Sequence[Run]) -> str:
    """Every completed recall run: its setting, task, attention, state size, tuning values, seed, steps
    and accuracies, sorted."""
    rows = []
    for pick in picks(runs):
        for run in pick.runs:
            values = ", ".join(f"{value:g}" for value in tuning_values(run)) or "-"
            size = run.value(STATE_SIZE)
            rows.append([
                setting(run), run.task, run.variant, state_text(run), f"{int(size):,}" if size else "—",
                values, run.seed, steps(run), percent(run.value(VALIDATION)), percent(run.value(TEST)),
            ])  # fmt: skip
    headers = ["setting", "task", "run", "state axis", "state size", "tuned", "seed", "steps", "val acc (%)",
               "test acc (%)"]  # fmt: skip
    return markdown_table(headers, sorted(rows, key=lambda row: [str(cell) for cell in row])) if rows else ""


def recall_blocks(report: ReportInput) -> list[str]:
    """The MQAR table, MAD's table and the runs appendix under their headings, for what ran."""
    blocks = []
    if table := mqar_table(report.recall):
        blocks += ["## MQAR: every point of the figure", MQAR_NOTE, table]
    mad = mad_picks(report.recall)
    if table := mad_table(mad):
        blocks += ["## MAD scores (%)", MAD_NOTE, table]
        blocks += ["## MAD: every pick behind the scores", MAD_PICKS_NOTE, mad_picks_table(mad)]
    if table := runs_table(report.recall):
        blocks += ["## Every recall run", RUNS_NOTE, table]
    return blocks


MAD_PICKS_NOTE = (
    "A row per pick of MAD's table: one configuration and task at the tuning values with the best "
    "validation accuracy (mean over seeds), `from` how many were swept, its test accuracy (mean ± std "
    f"over the seeds at those values). {EDGE_MARK}: a best at the highest or lowest value swept, or "
    "from one value."
)
RUNS_NOTE = (
    "Each run with its tuning values (`tuned`: the preset's `tuning_axes`, e.g. the learning rate), "
    "from which the tables above pick."
)
MQAR_NOTE = (
    "A row per configuration: the run's job less its seed and its tuning axes (the learning rate), so "
    "that runs of another vocabulary, head count, width, step count, preset or data never share a row. "
    "`picked`: the tuning values with the best validation accuracy (mean over seeds), `from`: how many "
    "were swept; the test accuracy is the mean ± std over the seeds at those values (seeds in "
    f"brackets). {EDGE_MARK} marks a best at the highest or lowest value swept, or from one value: the "
    "sweep does not rule out a better rate beyond it, so it supports no verdict that a mixer does not "
    "recall. Chance is 1 / pairs."
)
MAD_NOTE = (
    "Per configuration and task, the mean over MAD's difficulty levels (`data_prep.recall.MAD_LEVELS`, "
    "named with their count in brackets) of each level's test accuracy at its best tuning values (MAD's "
    "score). A cell that is not one of MAD's levels (another length, fresh batches: the CPU tier's "
    "cells) is its own, never averaged, with how it differs from MAD's baseline (what a whole row "
    "shares, once in its `cells`). "
    f"{EDGE_MARK}: a best at an edge of its sweep."
)
