"""The LRA table of every finished run: ``python -m lra.report [--runs DIR ...] [--out results]``;
with ``--progress``, how far the sweeps under the folders are instead (``lra.progress``).

Reads every ``summary.json`` under the run folders (Hydra's ``outputs/`` for single runs and
``multirun/`` for sweeps by default) and writes ``<out>/lra_table.md``: test accuracy per attention
× task as mean ± std over seeds (n seeds), the five-task average where all five are present, the
published tables beside it, a time / peak-memory table in the form of Skyformer's Table 2, the
failed / NaN / interrupted jobs apart with their errors, and ``<out>/lra_accuracy_vs_time.png``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from lra.progress import progress_table
from lra.provenance import markdown_table, rerun_command
from lra.published import ACCURACY, RUN_COST, RUN_COST_PAPER, TASKS
from lra.runs import GENERATED, Cell, Run, find_runs, latest_per_seed, metric_cells

DEFAULT_RUNS = (Path("outputs"), Path("multirun"))
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


WANDB_SECTION = """\
Every run logs to W&B as `{task}-{attention}-s{seed}` (with the options its sweep varies), grouped by
task (`group = task`) and tagged with its task, attention and `budget=N`, with the resolved config (so
`attention.name` and every option are config fields).
Runs are offline by default: upload them first with `wandb sync outputs/*/*/wandb/offline-run-*` and
`wandb sync multirun/*/*/wandb/offline-run-*`. The same comparison as the accuracy table in a W&B workspace:

1. Filter the runs to those with a `test/acc` (failed, NaN and interrupted jobs never log one) and, for one
   task, `Group = <task>` (or the tag `<task>`); for a sweep, also the tags of the attentions compared.
2. Group runs by the config field `attention.name` (not by seed: the seeds are what is averaged); add an
   option such as `attention.num_landmarks` to the grouping to split a budget sweep, as the
   `attention (option=value)` rows above do.
3. A *Bar chart* (or the runs table's group row) of `test/acc` with aggregation *Mean* and range *Std Dev*
   reproduces one column (W&B shows fractions; the table shows percent). One panel per task, or a
   *Parallel coordinates* / custom table with the group key `task` to see all five at once.
4. For the cost table: the same grouping with `perf/train_time_s` and `perf/peak_gpu_mem_mb`
   (`perf/peak_rss_mb` on CPU); for the plot below, a *Scatter plot* of `test/acc` against
   `perf/train_time_s` coloured by `attention.name`."""


def provenance(runs: Sequence[Run]) -> str:
    devices = sorted({r.device for r in runs if r.device})
    started = sorted(r.started for r in runs if r.started)
    finished = sorted(r.finished for r in runs if r.finished)
    span = f"{started[0]} to {finished[-1]}" if started and finished else "unknown"
    return f"- devices: {', '.join(devices) or 'unknown'}\n- runs started/finished: {span}"


def write_plot(path: Path, runs: Sequence[Run]) -> None:
    """Test accuracy (%) against whole-fit wall time (s), one panel per task, one series per attention."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    accuracy = metric_cells(runs, "test/acc", scale=100.0)
    seconds = metric_cells(runs, "perf/train_time_s")
    tasks = [t for t in TASKS if any(t in cells for cells in accuracy.values())] or list(TASKS)
    colors = {
        variant: f"C{i}" for i, variant in enumerate(sorted(accuracy))
    }  # the same colour in every panel
    fig, axes = plt.subplots(1, len(tasks), figsize=(3.6 * len(tasks), 3.6), squeeze=False)
    for task, ax in zip(tasks, axes[0], strict=True):
        for variant in sorted(accuracy):
            acc, time_s = accuracy[variant].get(task), seconds.get(variant, {}).get(task)
            if acc is not None and time_s is not None:
                ax.errorbar(
                    time_s.mean, acc.mean, xerr=time_s.std, yerr=acc.std, marker="o", capsize=3,
                    color=colors[variant], label=variant,
                )  # fmt: skip
        ax.set(xlabel="train time (s)", ylabel="test accuracy (%)", title=task)
        if ax.has_data():
            ax.set_xscale("log")
        ax.grid(True, which="both", alpha=0.3)
    legend = {
        label: handle for ax in axes[0] for handle, label in zip(*ax.get_legend_handles_labels(), strict=True)
    }
    handles, labels = list(legend.values()), list(legend)
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 4), fontsize=8)
    fig.tight_layout(rect=(0, 0.12 if handles else 0, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def split_by_protocol(runs: Sequence[Run]) -> list[Run]:
    """``runs``, each variant labelled with its training protocol when the completed runs do not all
    share one, so that runs trained differently never share a row."""
    if len({run.protocol for run in runs if run.status == "completed"}) <= 1:
        return list(runs)
    return [replace(run, variant=f"{run.variant} [{run.protocol}]") for run in runs]


def protocols_section(runs: Sequence[Run]) -> str:
    """The header line(s) naming the training protocol(s) of the completed runs."""
    counts = Counter(run.protocol for run in runs)
    if len(counts) <= 1:
        return f"- training protocol: {next(iter(counts), 'none')}"
    lines = ["- training protocols differ between these runs (each row names its own in brackets):"]
    return "\n".join(
        lines + [f"  - {protocol}: {count} run(s)" for protocol, count in sorted(counts.items())]
    )


def build_report(runs: Sequence[Run], command: str) -> str:
    """The markdown report of ``runs`` (already passed through ``split_by_protocol``)."""
    completed = latest_per_seed(runs)
    return (
        "\n\n".join(
            [
                "# LRA results",
                f"Produced by `{command}` from {len(runs)} summary.json file(s): {len(completed)} completed "
                f"run(s) counted (the latest per attention × task × seed), "
                f"{sum(r.status != 'completed' for r in runs)} not completed (listed apart below).",
                provenance(runs),
                protocols_section(completed),
                "## Test accuracy (%)",
                "Mean ± sample std over seeds (number of seeds); the average is the mean of the five task "
                "means and is given only where all five tasks have runs. A row marked "
                f"`{GENERATED}` trained on a built-in generator's data (ListOps, Pathfinder) instead of "
                "the LRA release: a different task, not comparable with the published numbers, and never "
                "averaged as an LRA score.",
                accuracy_table(completed),
                "## Published accuracy (%)",
                published_tables(),
                "## Time and memory (as Skyformer, Table 2)",
                cost_table(completed),
                "## Failed, NaN and interrupted jobs",
                failed_section(runs),
                "## The same comparison in W&B",
                WANDB_SECTION,
                "![accuracy against time](lra_accuracy_vs_time.png)",
            ]
        )
        + "\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m lra.report", description=__doc__)
    parser.add_argument(
        "--runs", nargs="+", type=Path, default=None, help="run folders (default: outputs multirun)"
    )
    parser.add_argument("--out", type=Path, default=Path("results"))
    parser.add_argument(
        "--progress",
        action="store_true",
        help="print the jobs completed, running, interrupted and failed per task x attention, and stop",
    )
    args = parser.parse_args(argv)
    missing = [str(root) for root in args.runs or () if not root.is_dir()]
    if missing:
        parser.error(f"--runs folder(s) not found: {', '.join(missing)}")
    roots = args.runs or [root for root in DEFAULT_RUNS if root.is_dir()]
    if args.progress:
        print(progress_table(roots or DEFAULT_RUNS))
        return 0
    runs = split_by_protocol(find_runs(roots))
    if not runs:
        searched = ", ".join(str(root) for root in (args.runs or DEFAULT_RUNS))
        raise FileNotFoundError(
            f"no summary.json under {searched}; train first, e.g. "
            "`python -m lra task=listops attention=nystrom`, "
            "or point --runs at the run folders"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "lra_table.md").write_text(build_report(runs, rerun_command("lra.report", argv)))
    write_plot(args.out / "lra_accuracy_vs_time.png", latest_per_seed(runs))
    print(f"wrote {args.out / 'lra_table.md'} and {args.out / 'lra_accuracy_vs_time.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
