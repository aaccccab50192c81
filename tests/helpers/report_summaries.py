"""Synthetic summary.json files (and metrics CSVs) for the report's tests, as the harness writes them."""

from __future__ import annotations

import json
from pathlib import Path

DEFAULT_PROTOCOL = {"schedule": "warmup_linear", "clip": "norm", "clip_value": 1.0, "select_after": 0.0}


def write_summary(
    folder: Path,
    task: str,
    attention: str,
    seed: int,
    acc: float | None,
    *,
    status: str = "completed",
    error: str | None = None,
    train_time_s: float = 3600.0,
    finished: str = "2025-01-01T10:00:00",
    config: dict | None = None,
    protocol: dict | None = None,
    data: dict | None = None,
    schema: int | None = None,
    metrics: dict | None = None,
    options: dict | None = None,
) -> Path:
    """A run folder with its summary.json; ``schema`` None writes a schema-1 file (no ``schema`` key);
    ``options``: the options its sweep varied. Returns the run folder."""
    all_metrics = {"perf/train_time_s": train_time_s, "perf/peak_rss_mb": 2048.0, "train/steps": 100}
    if acc is not None:
        all_metrics["test/acc"] = acc
    summary = {
        "task": task,
        "attention": attention,
        "seed": seed,
        "status": status,
        "error": error,
        "metrics": all_metrics | (metrics or {}),
        "config": config or {"attention": {"name": attention}},
        "device": "cpu (test)",
        "started": "2025-01-01T09:00:00",
        "finished": finished,
        "protocol": protocol or DEFAULT_PROTOCOL,
        "data": data,
        "options": options or {},
    }
    if schema is not None:
        summary["schema"] = schema
    run_dir = folder / f"{task}-{attention}-s{seed}-{finished}"
    run_dir.mkdir(parents=True)
    (run_dir / "summary.json").write_text(json.dumps(summary))
    return run_dir


def write_curve(run_dir: Path, points: list[tuple[float, float]], *, cut: bool = False) -> None:
    """``csv/metrics.csv`` as Lightning's CSV logger writes it: training rows between validation rows
    that carry ``val/acc`` and ``perf/elapsed_s``; ``cut`` ends the file mid-row."""
    lines = ["epoch,perf/elapsed_s,step,train/acc,train/loss,val/acc,val/loss"]
    for index, (seconds, accuracy) in enumerate(points):
        step = 10 * (index + 1)
        lines.append(f"0,,{step - 1},0.5,0.7,,")
        lines.append(f"0,{seconds},{step - 1},,,{accuracy},0.6")
    text = "\n".join(lines) + "\n"
    (run_dir / "csv").mkdir()
    (run_dir / "csv" / "metrics.csv").write_text(text[: len(text) - 7] if cut else text)
