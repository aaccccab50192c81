"""The tables printed from summary.json files: a run's final table (``format_table``) and, after a
multirun, the table of the whole sweep (``SweepSummary``, a Hydra callback in conf/config.yaml).

A job that did not complete says why in the table: its summary.json's ``error`` in a last ``why``
column, one line cut between words (a job killed without a word, by SIGKILL or a crash, has no
summary.json: it is ``killed``, with what ``lra.results.killed_jobs`` found); when every job of a
sweep failed for one reason, that reason stands once above the table instead.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback as HydraCallback
from omegaconf import DictConfig

from lra.config.naming import record_swept_keys, short_keys
from lra.one_line import one_line
from lra.results.killed_jobs import KILLED, killed_summary
from lra.results.refused_jobs import refused_lines, refused_rows
from lra.results.summary_json import read_summaries


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def format_accuracy(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}%"


def format_memory(metrics: dict[str, Any]) -> str:
    if metrics.get("perf/peak_gpu_mem_mb") is not None:
        return f"{metrics['perf/peak_gpu_mem_mb']:.0f} MB GPU"
    if metrics.get("perf/peak_rss_mb") is not None:
        return f"{metrics['perf/peak_rss_mb']:.0f} MB RSS"
    return "-"


TABLE_COLUMNS = (
    "task",
    "attention",
    "SPT",
    "seed",
    "status",
    "best val acc",
    "test acc",
    "time",
    "peak memory",
)
WHY_COLUMN = "why"
WHY_WIDTH = 60  # characters of a reason in the why column
REASON_WIDTH = 200  # characters of a reason on a line of its own


def option_columns(summaries: list[dict[str, Any]]) -> list[str]:
    """The options the jobs' sweep varies (summary.json ``options``), in the order first seen."""
    return list(dict.fromkeys(key for summary in summaries for key in summary.get("options") or {}))


def training_time(metrics: dict[str, Any]) -> float | None:
    """Seconds of training, the pretraining stage's included (None when the run did not train)."""
    times = [metrics.get(key) for key in ("perf/pretrain_time_s", "perf/train_time_s")]
    return None if all(time is None for time in times) else sum(time or 0.0 for time in times)


def pretrain_label(summary: dict[str, Any]) -> str:
    """The SPT column: ``-`` from scratch, ``masked``, or ``masked (from)`` for weights of pretrain.from."""
    pretrain = summary.get("pretrain")  # a summary of schema < 3 has none: a run from scratch
    if pretrain is None:
        return "-"
    return f"{pretrain['mode']} (from)" if pretrain.get("from") else pretrain["mode"]


def table_row(summary: dict[str, Any], options: list[str]) -> tuple[str, ...]:
    metrics = summary["metrics"]
    values = summary.get("options") or {}
    return (
        summary["task"],
        summary["attention"],
        *(str(values.get(key, "-")) for key in options),
        pretrain_label(summary),
        str(summary["seed"]),
        summary["status"],
        format_accuracy(metrics.get("val/acc_best")),
        format_accuracy(metrics.get("test/acc")),
        format_duration(training_time(metrics)),
        format_memory(metrics),
    )


def failure_reason(summary: dict[str, Any]) -> str:
    """Why a job did not complete: its summary.json's ``error``, else its status."""
    return summary.get("error") or summary["status"]


def shared_failure(unfinished: Sequence[tuple[str, str]], jobs: int) -> str | None:
    """``All N jobs failed: REASON`` when all of two or more ``jobs`` are ``unfinished`` (status, reason)
    for one reason, else None."""
    statuses = {status for status, _ in unfinished}
    reasons = {reason for _, reason in unfinished}
    if not len(unfinished) == jobs > 1 or len(reasons) > 1:
        return None
    outcome = statuses.pop() if len(statuses) == 1 else "did not complete"
    return f"All {jobs} jobs {outcome}: {one_line(reasons.pop(), REASON_WIDTH)}"


def why_cell(summary: dict[str, Any]) -> str:
    return "-" if summary["status"] == "completed" else one_line(failure_reason(summary), WHY_WIDTH)


def format_table(summaries: list[dict[str, Any]]) -> str:
    """A plain-text table: task, attention, a column per option the sweep varies, SPT (self-pretraining,
    ``pretrain_label``), seed, status, best val acc, test acc, time (both stages'), peak memory, and
    ``why`` a job did not complete (module docstring)."""
    options = option_columns(summaries)
    header = (*TABLE_COLUMNS[:2], *short_keys(options).values(), *TABLE_COLUMNS[2:])
    rows = [table_row(summary, options) for summary in summaries]
    unfinished = [(s["status"], failure_reason(s)) for s in summaries if s["status"] != "completed"]
    shared = shared_failure(unfinished, len(summaries))
    if shared is None and unfinished:
        header = (*header, WHY_COLUMN)
        rows = [(*row, why_cell(summary)) for row, summary in zip(rows, summaries, strict=True)]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in (header, *rows)
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join([shared, *lines] if shared else lines)


def without_retried(summaries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``summaries`` less each job killed without a word (``killed``) whose job another of the sweep's
    jobs ran to completion (the same fingerprint): a search's surviving worker retries a killed trial."""
    done = {summary.get("fingerprint") for summary in summaries if summary["status"] == "completed"} - {None}
    return [s for s in summaries if not (s["status"] == KILLED and s.get("fingerprint") in done)]


def print_sweep_table(sweep_dir: Path) -> list[dict[str, Any]]:
    """Print the table of the jobs of the sweep in ``sweep_dir`` (none when no job wrote a summary, left
    a run killed without a word or was refused) and return their summaries and refused jobs' rows."""
    summaries = without_retried(read_summaries(sweep_dir, killed_summary)) + refused_rows(sweep_dir)
    if summaries:
        print(f"\nSweep {sweep_dir}:\n{format_table(summaries)}", flush=True)
    return summaries


class SweepSummary(HydraCallback):
    """Before a multirun: hand the keys it sweeps to its jobs, which name themselves with them
    (``lra.config.naming``). After it: print the table of every job, with a column per swept option, and
    exit non-zero when any job did not complete.

    Each job records its own outcome in its summary.json and the sweep goes on past a failed job;
    this is the one place that reports the sweep as a whole, but for a sweep that a stop signal ends
    (``lra.job.sweep_stop`` prints its table then).
    """

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        params = config.hydra.sweeper.get("params") or {}
        record_swept_keys(list(config.hydra.overrides.task), dict(params))

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        summaries = print_sweep_table(sweep_dir)
        refused = refused_lines(sweep_dir)
        if refused:
            print("\n".join(refused), file=sys.stderr, flush=True)
        unfinished = [summary for summary in summaries if summary["status"] != "completed"]
        if unfinished:
            where = "the lines above hold a refused job's, " if refused else ""
            print(
                f"{len(unfinished)} of {len(summaries)} jobs did not complete; {where}each one's "
                f"summary.json holds its whole error",
                file=sys.stderr,
                flush=True,
            )
            sys.exit(1)
