"""Validation accuracy against training time, read from each run's metrics CSV (Skyformer Figure 2).

Every run writes ``csv/metrics.csv`` in its folder; each validation row carries ``val/acc`` and
``perf/elapsed_s`` (training seconds so far, validations included, summed over resumed segments). A
self-pretrained run's pretraining rows carry no ``val/acc``; its curve is its fine-tuning's, shifted by
the pretraining's seconds (summary.json ``pretrain.time_s``) so that both protocols are compared on total
time. A run without that file or column, whose file ends mid-row, or whose pretraining time is not
recorded, has no curve: ``read_curves`` names it with the reason, and the rest of the report is written.
"""

from __future__ import annotations

import csv
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lra.report.runs import Run

METRICS_CSV = Path("csv") / "metrics.csv"
ELAPSED = "perf/elapsed_s"
VAL_ACC = "val/acc"


class CurveError(ValueError):
    """Why a run has no curve, in one line."""


@dataclass(frozen=True)
class Curve:
    """One run's validations: training seconds (pretraining included) and validation accuracy (0-1),
    in order."""

    run: Run
    seconds: tuple[float, ...]
    accuracy: tuple[float, ...]


def read_curve(run: Run) -> Curve:
    """The curve of ``run`` from ``<run folder>/csv/metrics.csv``, after its pretraining when
    self-pretrained; ``CurveError`` when it has none."""
    if run.spt and run.pretrain_time_s is None:
        raise CurveError("self-pretrained, but summary.json records no pretraining time (pretrain.time_s)")
    offset = run.pretrain_time_s or 0.0
    path = run.path.parent / METRICS_CSV
    if not path.is_file():
        raise CurveError(f"no {METRICS_CSV}")
    text = path.read_text()
    if text and not text.endswith("\n"):
        raise CurveError(f"{METRICS_CSV} is truncated (its last line is cut)")
    reader = csv.DictReader(text.splitlines())
    if not {ELAPSED, VAL_ACC} <= set(reader.fieldnames or ()):
        raise CurveError(
            f"{METRICS_CSV} has no {ELAPSED} and {VAL_ACC} columns (written by an older harness)"
        )
    points = []
    for line, row in enumerate(reader, start=2):
        if None in row or None in row.values():
            raise CurveError(f"{METRICS_CSV} line {line} has the wrong number of fields (truncated?)")
        if row[ELAPSED] and row[VAL_ACC]:
            try:
                points.append((offset + float(row[ELAPSED]), float(row[VAL_ACC])))
            except ValueError as error:
                raise CurveError(f"{METRICS_CSV} line {line}: {error}") from None
    if not points:
        raise CurveError(f"{METRICS_CSV} has no validation row")
    seconds, accuracy = zip(*points, strict=True)
    return Curve(run, seconds, accuracy)


def read_curves(runs: Sequence[Run]) -> tuple[list[Curve], list[tuple[Run, str]]]:
    """The curves of ``runs``, and (run, reason) for each run without one."""
    curves, missing = [], []
    for run in runs:
        try:
            curves.append(read_curve(run))
        except (CurveError, OSError) as error:
            missing.append((run, str(error)))
    return curves, missing


@dataclass(frozen=True)
class SeedBand:
    """Curves of one variant on one task over seeds, aligned by evaluation (the seeds validate at the
    same steps): mean seconds, mean, lowest and highest accuracy (%) at each of the first ``n``
    evaluations, ``n`` the shortest curve's length."""

    seconds: list[float]
    mean: list[float]
    low: list[float]
    high: list[float]
    seeds: int


def seed_band(curves: Sequence[Curve]) -> SeedBand:
    length = min(len(curve.seconds) for curve in curves)
    columns = range(length)
    accuracy = [[100 * curve.accuracy[i] for curve in curves] for i in columns]
    return SeedBand(
        seconds=[statistics.fmean(curve.seconds[i] for curve in curves) for i in columns],
        mean=[statistics.fmean(values) for values in accuracy],
        low=[min(values) for values in accuracy],
        high=[max(values) for values in accuracy],
        seeds=len(curves),
    )
