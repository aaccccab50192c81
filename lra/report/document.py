"""The report's markdown document: header, provenance, tables and the W&B recipe, in order."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from lra.report.runs import GENERATED, Run, latest_per_seed
from lra.report.tables import accuracy_table, cost_table, failed_section, published_tables

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


def provenance_lines(runs: Sequence[Run]) -> str:
    devices = sorted({r.device for r in runs if r.device})
    started = sorted(r.started for r in runs if r.started)
    finished = sorted(r.finished for r in runs if r.finished)
    span = f"{started[0]} to {finished[-1]}" if started and finished else "unknown"
    return f"- devices: {', '.join(devices) or 'unknown'}\n- runs started/finished: {span}"


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
                provenance_lines(runs),
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
