"""Synthetic summary.json files (and metrics CSVs) for the report's tests, as the harness writes them."""

from __future__ import annotations

import json
from pathlib import Path

DEFAULT_PROTOCOL = {"schedule": "warmup_linear", "clip": "norm", "clip_value": 1.0, "select_after": 0.0}
FINE_TUNING_COLUMNS = ["epoch", "perf/elapsed_s", "step", "train/acc", "train/loss", "val/acc", "val/loss"]
PRETRAINING_COLUMNS = ["pretrain/acc", "pretrain/elapsed_s", "pretrain/loss", "val/pretrain_acc"]


def masked_pretrain(
    time_s: float | None = 600.0,
    masked_acc: float | None = 0.3,
    *,
    steps: int = 1000,
    mask_prob: float = 0.1,
    loss: str = "ce",
    source: str | None = None,
) -> dict:
    """summary.json's ``pretrain`` record of a self-pretrained run; ``source``: ``pretrain.from``."""
    return {
        "mode": "masked",
        "from": source,
        "steps": steps,
        "mask_prob": mask_prob,
        "loss": loss,
        "masked_acc": masked_acc,
        "time_s": time_s,
    }


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
    pretrain: dict | None = None,
    share: float | None = None,
    options: dict | None = None,
    preset: str | None = None,
    overrides: list[str] | None = None,
) -> Path:
    """A run folder with its summary.json; ``schema`` None writes a schema-1 file (no ``schema`` key),
    or a schema-3 one for a self-pretrained run (``pretrain``, from ``masked_pretrain``, with its
    metrics and ``pretrain`` config; ``share``: the compute-matched split); ``options``: the options
    its sweep varied; ``preset``: the ``experiment=`` it trained under; ``overrides``: the keys its
    command line set (None: a summary that does not record them). Returns the run folder."""
    all_metrics = {"perf/train_time_s": train_time_s, "perf/peak_rss_mb": 2048.0, "train/steps": 100}
    if acc is not None:
        all_metrics["test/acc"] = acc
    config = dict(config or {"attention": {"name": attention}})
    if pretrain is not None:
        schema = schema or 3
        config["pretrain"] = {"mode": "masked", "share": share, "loss": pretrain["loss"]}
        all_metrics |= {"perf/pretrain_time_s": pretrain["time_s"], "pretrain/steps": pretrain["steps"]}
        all_metrics |= {"val/pretrain_acc": pretrain["masked_acc"]}
    summary = {
        "task": task,
        "attention": attention,
        "seed": seed,
        "status": status,
        "error": error,
        "metrics": all_metrics | (metrics or {}),
        "config": config,
        "device": "cpu (test)",
        "started": "2025-01-01T09:00:00",
        "finished": finished,
        "protocol": protocol or DEFAULT_PROTOCOL,
        "data": data,
        "options": options or {},
        "preset": preset,
    }
    if schema is not None:
        summary["schema"] = schema
    if overrides is not None:
        summary["overrides"] = overrides
    if (schema or 1) >= 3:
        summary["pretrain"] = pretrain
    spt = "" if pretrain is None else f"-pretrain=masked{f'-share={share}' if share else ''}"
    run_dir = folder / f"{task}-{attention}{spt}-s{seed}-{finished}"
    run_dir.mkdir(parents=True)
    (run_dir / "summary.json").write_text(json.dumps(summary))
    return run_dir


def write_curve(
    run_dir: Path,
    points: list[tuple[float, float]],
    *,
    cut: bool = False,
    pretraining: list[tuple[float, float]] = (),
) -> None:
    """``csv/metrics.csv`` as Lightning's CSV logger writes it: training rows between validation rows
    that carry ``val/acc`` and ``perf/elapsed_s``; ``cut`` ends the file mid-row. ``pretraining``:
    (pretraining seconds, masked-token accuracy) of a self-pretrained run's pretraining validations,
    written first, in rows of their own that carry no ``val/acc``."""
    columns = FINE_TUNING_COLUMNS + (PRETRAINING_COLUMNS if pretraining else [])
    rows = []
    for index, (seconds, accuracy) in enumerate(pretraining):
        step = 10 * (index + 1)
        rows.append({"epoch": 0, "step": step - 1, "pretrain/acc": 0.2, "pretrain/loss": 3.0})
        rows.append(
            {"epoch": 0, "step": step - 1, "pretrain/elapsed_s": seconds, "val/pretrain_acc": accuracy}
        )
    for index, (seconds, accuracy) in enumerate(points):
        step = 10 * (len(pretraining) + index + 1)
        rows.append({"epoch": 0, "step": step - 1, "train/acc": 0.5, "train/loss": 0.7})
        rows.append(
            {"epoch": 0, "perf/elapsed_s": seconds, "step": step - 1, "val/acc": accuracy, "val/loss": 0.6}
        )
    lines = [",".join(columns)] + [",".join(str(row.get(column, "")) for column in columns) for row in rows]
    text = "\n".join(lines) + "\n"
    (run_dir / "csv").mkdir()
    (run_dir / "csv" / "metrics.csv").write_text(text[: len(text) - 7] if cut else text)
