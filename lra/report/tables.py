"""The report's markdown tables: our accuracy and cost per attention × task, the published ones, the
jobs that did not complete."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from lra.report.provenance import markdown_table
from lra.report.published import ACCURACY, RUN_COST, RUN_COST_PAPER, TASKS
from lra.report.runs import GENERATED, Cell, Run, metric_cells

MEMORY_METRICS = {"perf/peak_gpu_mem_mb": "GPU max allocated", "perf/peak_rss_mb": "CPU peak RSS"}


def average_column(cells: dict[str, Cell]) -> str:
    """Mean of the five task means, or which tasks are missing."""
    missing = [task for task in TASKS if task not in cells]
    if missing:
        return "missing: " + ", ".join(missing)
    return f"{statistics.fmean(cells[task].mean for task in TASKS):.2f}"


def accuracy_table(runs: Sequence[Run]) -> str:
    cells = metric_cells(runs, "test/acc", scale=100.0)
    rows = [
        [variant, *(cells[variant][t].format() if t in cells[variant] else "—" for t in TASKS),
         "none: not the LRA data" if GENERATED in variant else average_column(cells[variant])]
        for variant in sorted(cells)
    ]  # fmt: skip
    return markdown_table(["attention", *TASKS, "average"], rows)


def published_tables() -> str:
    parts = []
    for table in ACCURACY:
        rows = []
        for attention, accuracy in table.rows.items():
            printed = table.averages.get(attention)
            average = f"{printed:.2f}" if printed is not None else f"{statistics.fmean(accuracy):.2f}*"
            rows.append([attention, *(f"{a:.2f}" for a in accuracy), average])
        parts += [f"**{table.paper}**", markdown_table(["attention", *TASKS, "average"], rows)]
    parts.append("\\* average computed here from the five accuracies (the source gives none).")
    return "\n\n".join(parts)


def cost_table(runs: Sequence[Run]) -> str:
    """Skyformer-Table-2 style: whole-run wall time (hours) and peak memory (GB) per task."""
    hours = metric_cells(runs, "perf/train_time_s", scale=1 / 3600)
    steps = metric_cells(runs, "train/steps")
    memory = {label: metric_cells(runs, metric, scale=1 / 1024) for metric, label in MEMORY_METRICS.items()}

    def memory_cell(variant: str, task: str) -> str:
        found = [
            (label, cells[variant][task]) for label, cells in memory.items() if task in cells.get(variant, {})
        ]
        return "; ".join(f"{cell.mean:.2f} ({label})" for label, cell in found) or "—"

    def time_cell(variant: str, task: str) -> str:
        if task not in hours.get(variant, {}):
            return "—"
        step_count = steps.get(variant, {}).get(task)
        return hours[variant][task].format(3) + (f", {step_count.mean:.0f} steps" if step_count else "")

    variants = sorted(set(hours) | {v for cells in memory.values() for v in cells})
    ours = [
        "Wall time of the whole fit (hours; mean ± std (seeds), steps):",
        markdown_table(["attention", *TASKS], [[v, *(time_cell(v, t) for t in TASKS)] for v in variants]),
        "Peak memory (GB, mean over seeds; which measure in brackets):",
        markdown_table(["attention", *TASKS], [[v, *(memory_cell(v, t) for t in TASKS)] for v in variants]),
    ]
    published_hours = [[c.attention, *(f"{c.hours[t]:.2f}" for t in TASKS)] for c in RUN_COST]
    published_memory = [[c.attention, *(f"{c.peak_gb[t]:.2f}" for t in TASKS)] for c in RUN_COST if c.peak_gb]
    published = [
        f"**{RUN_COST_PAPER}**: hours",
        markdown_table(["attention", *TASKS], published_hours),
        f"**{RUN_COST_PAPER}**: peak GB",
        markdown_table(["attention", *TASKS], published_memory),
    ]
    return "\n\n".join(ours + published)


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
            (r.error.splitlines() or [""])[-1][:200].replace("|", "\\|"),
            f"`{r.path.parent}`",
        ]
        for r in failed
    ]
    return markdown_table(["task", "attention", "seed", "status", "error", "run folder"], rows)
