"""Finished runs as the report reads them: one record per ``summary.json``, and metrics over seeds."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import attention_zoo


@dataclass(frozen=True)
class Run:
    """One ``summary.json``. ``variant``: the attention's name plus its non-default options;
    ``protocol``: how it trained (schedule, clipping, selection window), in words."""

    path: Path
    task: str
    variant: str
    seed: int | None
    status: str
    error: str
    metrics: dict[str, float]
    device: str
    started: str
    finished: str
    protocol: str = "unknown"


def protocol_label(protocol: dict | None) -> str:
    """``one_cycle, clip value 1.0, best after 20%``: a run's training protocol from its summary.json
    (attention dropout is an attention option, so it shows in the variant instead)."""
    if not protocol:
        return "unknown"
    clip = (
        "no clipping"
        if protocol.get("clip") is None
        else f"clip {protocol['clip']} {protocol.get('clip_value')}"
    )
    window = protocol.get("select_after") or 0
    selection = f"best after {100 * window:g}%" if window else "best of all evaluations"
    return f"{protocol.get('schedule')}, {clip}, {selection}"


GENERATED = "generated data"  # the mark of a row whose data came from a built-in generator


def data_labels(config: dict, data: dict | None) -> list[str]:
    """What a row must say about its data: the prepared set when it is not the task's own
    (``dataset=listops-demo``), and ``generated data`` when a built-in generator made it instead of
    the LRA release or the real source, so that such runs never sit in a row that reads as the LRA
    number. ``data`` is summary.json's record of the set (older summaries have none: the config's
    dataset is named instead)."""
    task = config.get("task") or {}
    data = data or {}
    dataset = data.get("set") or task.get("dataset")
    labels = [f"dataset={dataset}"] if dataset not in (None, task.get("name")) else []
    return labels + ([GENERATED] if data.get("source") == "generator" else [])


def variant_label(attention: str, config: dict, data: dict | None = None) -> str:
    """``nystrom`` or ``nystrom (num_landmarks=32)``: the registry options of ``config["attention"]``
    that differ from the core's defaults, so sweeps over options give separate rows, then what
    ``data_labels`` says of its data."""
    chosen = config.get("attention") or {}
    defaults = attention_zoo.spec(attention).options if attention in attention_zoo.available() else {}
    changed = [f"{k}={chosen[k]}" for k in defaults if k in chosen and chosen[k] != defaults[k]]
    changed += data_labels(config, data)
    return f"{attention} ({', '.join(changed)})" if changed else attention


def load_run(path: Path) -> Run:
    """A run from its summary.json; an unreadable file becomes a run with status ``unreadable``."""
    try:
        summary = json.loads(path.read_text())
        return Run(
            path=path,
            task=str(summary["task"]),
            variant=variant_label(
                str(summary["attention"]), summary.get("config") or {}, summary.get("data")
            ),
            seed=summary.get("seed"),
            status=str(summary["status"]),
            error=str(summary.get("error") or ""),
            metrics=summary.get("metrics") or {},
            device=str(summary.get("device") or "unknown"),
            started=str(summary.get("started") or ""),
            finished=str(summary.get("finished") or ""),
            protocol=protocol_label(summary.get("protocol")),
        )
    except (OSError, ValueError, KeyError, TypeError) as error:
        return Run(path, "?", "?", None, "unreadable", f"{type(error).__name__}: {error}", {}, "", "", "")


def find_runs(roots: Sequence[Path]) -> list[Run]:
    """Every summary.json under ``roots``, sorted by path."""
    return [load_run(path) for root in roots for path in sorted(root.rglob("summary.json"))]


def latest_per_seed(runs: Sequence[Run]) -> list[Run]:
    """Completed runs with one per (variant, task, seed): a rerun of a seed replaces the earlier one."""
    latest: dict[tuple[str, str, object], Run] = {}
    for run in sorted((r for r in runs if r.status == "completed"), key=lambda r: r.finished):
        latest[(run.variant, run.task, run.seed)] = run
    return list(latest.values())


@dataclass(frozen=True)
class Cell:
    """Mean and sample std (0 for one seed) of a metric over seeds, and the number of seeds."""

    mean: float
    std: float
    count: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Cell:
        return cls(
            statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0, len(values)
        )

    def format(self, digits: int = 2) -> str:
        spread = f" ± {self.std:.{digits}f}" if self.count > 1 else ""
        return f"{self.mean:.{digits}f}{spread} ({self.count})"


def metric_cells(runs: Sequence[Run], metric: str, scale: float = 1.0) -> dict[str, dict[str, Cell]]:
    """variant -> task -> Cell of ``metric × scale`` over the runs that report it."""
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        if run.metrics.get(metric) is not None:
            values[run.variant][run.task].append(float(run.metrics[metric]) * scale)
    return {variant: {task: Cell.of(v) for task, v in tasks.items()} for variant, tasks in values.items()}
