"""The report's markdown tables: our accuracy and model sizes per attention × task, the papers' tables in
their own layout with ours beside each published figure, and the jobs that did not complete."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from lra.one_line import one_line
from lra.provenance import markdown_table
from lra.report.runs import GENERATED, TOTAL_TIME, Cell, Run, metric_cells
from lra.results.plotting import natural_key
from lra.results.published_costs import RUN_COST, RUN_COST_PAPER
from lra.results.published_numbers import (
    SKYFORMER_ACCURACY,
    SKYFORMER_TASK_ORDER,
    SSM_COLUMNS,
    TASKS,
    PublishedAccuracy,
    PublishedModel,
    comparable,
)

MEMORY_METRICS = {"perf/peak_gpu_mem_mb": "GPU max allocated", "perf/peak_rss_mb": "CPU peak RSS"}
REFERENCE = "standard"  # the attention the cost ratios are taken against, as Skyformer Table 2
ERROR_WIDTH = 200  # characters of a failed job's error: its last line (a traceback's exception)


def average_column(cells: dict[str, Cell]) -> str:
    """Mean of the five task means, or which tasks are missing."""
    missing = [task for task in TASKS if task not in cells]
    if missing:
        return "missing: " + ", ".join(missing)
    return f"{statistics.fmean(cells[task].mean for task in TASKS):.2f}"


def accuracy_table(runs: Sequence[Run], metric: str = "test/acc") -> str:
    """Ours: ``metric`` (%) per variant × task, mean ± std [95% confidence interval] (seeds, and how
    many at chance)."""
    cells = metric_cells(runs, metric, scale=100.0)
    shown = {
        v: {t: cell.format(with_interval=True) for t, cell in tasks.items()} for v, tasks in cells.items()
    }
    rows = [
        [variant, *(shown[variant].get(t, "—") for t in TASKS),
         "none: not the LRA data" if GENERATED in variant else average_column(cells[variant])]
        for variant in sorted(cells, key=natural_key)
    ]  # fmt: skip
    return markdown_table(["attention", *TASKS, "average"], rows)


PARAMS, MIXER_PARAMS = "model/params", "model/mixer_params"
SIZE_RULE = 0.10  # LRA: a model at most 10% larger than the Transformer of its task and protocol


def size_references(runs: Sequence[Run]) -> dict[tuple[str, str, str], float]:
    """(task, data, protocol) -> the parameter count of ``standard`` there (with its default options
    where it ran so, else another ``standard`` variant)."""
    references: dict[tuple[str, str, str], float] = {}
    for run in sorted(runs, key=lambda r: r.label == REFERENCE):  # the default standard last, so it wins
        if run.attention == REFERENCE and run.metrics.get(PARAMS):
            references[(run.task, run.data, run.protocol)] = float(run.metrics[PARAMS])
    return references


def size_cell(run: Run, references: dict[tuple[str, str, str], float]) -> str:
    """``82,198 (mixer 41%)``, flagged ``⚑ +14% over standard`` beyond ``SIZE_RULE``."""
    total, mixer = run.metrics.get(PARAMS), run.metrics.get(MIXER_PARAMS)
    if not total:
        return "—"
    text = f"{total:,.0f}" + (f" (mixer {mixer / total:.0%})" if mixer is not None else "")
    reference = references.get((run.task, run.data, run.protocol))
    excess = total / reference - 1 if reference else 0.0
    return text + (f" ⚑ +{excess:.0%} over {REFERENCE}" if excess > SIZE_RULE else "")


def parameter_table(runs: Sequence[Run]) -> str:
    """Parameters per variant × task (the latest run of each), with the mixer's share and the flag of
    a model more than ``SIZE_RULE`` larger than ``standard`` of its task, data and protocol."""
    references, latest = size_references(runs), {}
    for run in sorted(runs, key=lambda r: r.finished):
        latest[(run.variant, run.task)] = run
    variants = sorted({variant for variant, _ in latest}, key=natural_key)
    rows = [[v, *(size_cell(latest[(v, t)], references) if (v, t) in latest else "—" for t in TASKS)]
            for v in variants]  # fmt: skip
    return markdown_table(["attention", *TASKS], rows)


def comparable_runs(
    runs: Sequence[Run], size: tuple[int, int] | None, preset: str | None
) -> tuple[list[Run], list[str]]:
    """The runs that may sit beside published rows of ``size`` trained as ``preset`` does
    (``lra.results.published_numbers.comparable``), and the variants left out (runs on generated data, which
    never sit beside a paper's figure, aside)."""
    kept = [run for run in runs if comparable(size, preset, run.size(), run.preset)]
    ids = {id(run) for run in kept}
    left = sorted({run.variant for run in runs if id(run) not in ids and GENERATED not in run.variant})
    return kept, left


def comparison_note(
    protocol: str, size: tuple[int, int] | None, preset: str | None, left: Sequence[str]
) -> str:
    """What the published rows trained as, which of ours sit beside them, and which are left out."""
    ours = [f"runs under `experiment={preset}`"] if preset else []
    ours += [f"runs of {size[0]} × {size[1]}"] if size else []
    note = f"The paper's rows: {protocol}. Ours beside them: {' or '.join(ours) or 'none'}."
    if left:
        note += f" Left out, trained otherwise or at another size: {', '.join(left)}."
    return note


def paper_rows(runs: Sequence[Run], published: Sequence[str]) -> list[tuple[str, str | None]]:
    """(attention, our variant or None) per row of a paper's table: each published attention with every
    variant of it we ran (or None), then the variants of attentions the paper does not have. Runs on
    generated data never sit beside a paper's figure."""
    variants: dict[str, set[str]] = {}
    for run in runs:
        if GENERATED not in run.variant:
            variants.setdefault(run.attention, set()).add(run.variant)
    rows: list[tuple[str, str | None]] = []
    for attention in [*published, *sorted(set(variants) - set(published))]:
        ours = sorted(variants.get(attention, ()))
        rows += [(attention, variant) for variant in ours] if ours else [(attention, None)]
    return rows


def paper_accuracy_table(runs: Sequence[Run], table: PublishedAccuracy, metric: str = "test/acc") -> str:
    """``table`` in its paper's column order, each cell ``ours / the paper's`` (ours: the runs
    ``comparable`` with its rows), AVG as the paper computes it (the mean of the five task accuracies)
    with the paper's printed AVG beside; under it, ``comparison_note``."""
    runs, left = comparable_runs(runs, table.size, table.preset)
    cells = metric_cells(runs, metric, scale=100.0)
    rows = []
    for attention, variant in paper_rows(runs, list(table.rows)):
        ours = cells.get(variant, {}) if variant else {}
        in_paper = attention in table.rows
        row = [variant or attention]
        for task in table.columns:
            mine = ours[task].format() if task in ours else "—"
            row.append(f"{mine} / {table.accuracy(attention, task):.2f}" if in_paper else f"{mine} / —")
        mine_average = average_column(ours) if set(TASKS) <= set(ours) else "—"
        row.append(f"{mine_average} / {table.averages[attention]:.2f}" if in_paper else f"{mine_average} / —")
        rows.append(row)
    note = comparison_note(table.protocol, table.size, table.preset, left)
    return markdown_table(["attention", *table.columns, "AVG"], rows) + "\n\n" + note


def other_models_table(
    runs: Sequence[Run], models: Sequence[PublishedModel], metric: str = "test/acc"
) -> str:
    """Our variants (runs on the LRA data) and, marked apart, other models' published rows, in
    ``SSM_COLUMNS``; AVG over the five tasks of ``TASKS`` and over all six with Path-X: ours where
    every task has runs, the published rows' five from their cells and six as printed."""
    cells = metric_cells([run for run in runs if GENERATED not in run.variant], metric, scale=100.0)

    def mean_of(values: Sequence[float | None]) -> str:
        return f"{statistics.fmean(values):.2f}" if values and None not in values else "—"

    rows = []
    for variant in sorted(cells):
        ours = cells[variant]
        means = [ours[task].mean if task in ours else None for task in SSM_COLUMNS]
        rows.append(
            [variant, *(ours[task].format() if task in ours else "—" for task in SSM_COLUMNS),
             mean_of(means[: len(TASKS)]), mean_of(means)]
        )  # fmt: skip
    for model in models:
        figures = [model.accuracy(task) for task in SSM_COLUMNS]
        rows.append(
            [f"{model.model} (published: {model.paper}; another model, another size)",
             *("not verified" if value is None else f"{value:.2f}" for value in figures),
             mean_of(figures[: len(TASKS)]), f"{model.average:.2f}"]
        )  # fmt: skip
    return markdown_table(["model", *SSM_COLUMNS, "AVG (5)", "AVG (6, with Path-X)"], rows)


def memory_cells(runs: Sequence[Run]) -> tuple[dict[str, dict[str, Cell]], list[str]]:
    """Peak memory in GB per variant × task (GPU max allocated where measured, else CPU peak RSS),
    and the measures used."""
    found = {label: metric_cells(runs, metric, scale=1 / 1024) for metric, label in MEMORY_METRICS.items()}
    merged: dict[str, dict[str, Cell]] = {}
    for cells in reversed(found.values()):  # GPU last, so it wins where both were recorded
        for variant, tasks in cells.items():
            merged.setdefault(variant, {}).update(tasks)
    return merged, [label for label, cells in found.items() if cells]


def ratio(value: float | None, reference: float | None) -> str:
    return f"×{value / reference:.2f}" if value is not None and reference else "×—"


def cost_table(
    runs: Sequence[Run], ours: dict[str, dict[str, Cell]], published: dict[str, dict[str, float]], digits: int
) -> str:
    """Skyformer Table 2's layout for one measure: per task ``ours ×ratio / paper's ×ratio``, each ratio
    to its own ``standard`` row (our reference: the first ``standard`` variant we ran); a variant with
    runs at chance says how many in its label."""
    rows = paper_rows(runs, list(published))
    reference = next((variant for attention, variant in rows if attention == REFERENCE and variant), None)
    table = []
    for attention, variant in rows:
        flagged = sum(run.at_chance() for run in runs if variant and run.variant == variant)
        row = [f"{variant} ({flagged} run(s) at chance)" if flagged else variant or attention]
        for task in SKYFORMER_TASK_ORDER:
            mine = ours.get(variant, {}).get(task) if variant else None
            base = ours.get(reference, {}).get(task) if reference else None
            paper = published.get(attention, {}).get(task)
            paper_base = published[REFERENCE][task]
            left = f"{mine.format(digits)} {ratio(mine.mean, base and base.mean)}" if mine else "—"
            right = f"{paper:.2f} {ratio(paper, paper_base)}" if paper is not None else "—"
            row.append(f"{left} / {right}")
        table.append(row)
    return markdown_table(["attention", *SKYFORMER_TASK_ORDER], table)


def skyformer_cost_tables(runs: Sequence[Run]) -> str:
    """Skyformer Table 2: whole-run hours and peak GB per task, ours (the runs ``comparable`` with its
    rows) beside the paper's, with ratios."""
    runs, _ = comparable_runs(runs, SKYFORMER_ACCURACY.size, SKYFORMER_ACCURACY.preset)
    hours = metric_cells(runs, TOTAL_TIME, scale=1 / 3600)
    steps = metric_cells(runs, "train/steps")
    memory, measures = memory_cells(runs)
    step_counts = sorted({f"{cell.mean:.0f}" for tasks in steps.values() for cell in tasks.values()})
    return "\n\n".join(
        [
            f"Each cell: ours, mean ± std (seeds), ×ratio to our `{REFERENCE}` on the task / "
            f"{RUN_COST_PAPER}, ×ratio to its self-attention. Hours are not comparable across machines; "
            f"the ratios are. Our runs trained {', '.join(step_counts) or 'no'} steps (the paper: 50k).",
            "Wall time of the whole fit (hours; an SPT row's includes its pretraining):",
            cost_table(runs, hours, {c.attention: c.hours for c in RUN_COST}, 3),
            f"Peak memory (GB; ours: {', '.join(measures) or 'none recorded'}):",
            cost_table(runs, memory, {c.attention: c.peak_gb for c in RUN_COST}, 2),
        ]
    )


def failed_section(runs: Sequence[Run]) -> str:
    failed = [run for run in runs if run.status != "completed"]
    if not failed:
        return "None."
    rows = [
        [
            r.task,
            r.variant,
            r.seed,
            r.status,
            one_line((r.error.splitlines() or [""])[-1], ERROR_WIDTH).replace("|", "\\|"),
            f"`{r.path.parent}`",
        ]
        for r in failed
    ]
    return markdown_table(["task", "attention", "seed", "status", "error", "run folder"], rows)
