"""``summary.json`` of every run (``make_summary`` lists its keys): written, found in a job's folder and
read back. ``lra.results.summary_tables`` prints them; ``lra.report`` reads them.

A resumed run has one summary.json, in its original folder; its ``started`` is the start of the last
segment.
"""

from __future__ import annotations

import json
import platform
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from data_prep.storage import write_json
from lra.config.records import SummaryRecord
from lra.provenance import git_commit, installed_version

SUMMARY_FILE = "summary.json"
SCHEMA = 3  # the layout of summary.json (make_summary); raised when a reader must tell layouts apart
STATUSES = ("completed", "failed", "nan", "interrupted")
METRIC_KEYS = (
    "val/acc_best",
    "test/acc",
    "test/loss",
    "test/acc_final",
    "test/loss_final",
    "perf/step_ms",
    "perf/samples_per_s",
    "perf/train_time_s",
    "model/params",
    "model/mixer_params",
    "model/state_size",
    "train/steps",
)
STATE_SIZE = "model/state_size"  # numbers per layer the attention carries across the sequence
VERSIONED_PACKAGES = {
    "torch": "torch",
    "lightning": "lightning",
    "torchmetrics": "torchmetrics",
    "hydra": "hydra-core",
    "omegaconf": "omegaconf",
    "numpy": "numpy",
    "wandb": "wandb",
    "lra": "lra-harness",
}


def now_iso() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")


def versions() -> dict[str, str | None]:
    """Python and the installed versions of the packages a run depends on (None if absent)."""
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name, distribution in VERSIONED_PACKAGES.items():
        found[name] = installed_version(distribution)
    import torch

    found["cuda"] = torch.version.cuda
    return found


def protocol_record(recorded: dict[str, Any]) -> dict[str, Any]:
    """How the run trained, from the config its summary records: its ``protocol`` as it applied
    (``clip_value`` null without clipping, ``attention_dropout`` null for a core without it)."""
    protocol = recorded.get("protocol") or {}
    clip = protocol.get("clip")
    return {
        "schedule": protocol.get("schedule"),
        "clip": clip,
        "clip_value": None if clip is None else protocol.get("clip_value"),
        "select_after": protocol.get("select_after"),
        "tested": protocol.get("tested", "best"),
        "attention_dropout": (recorded.get("attention") or {}).get("attention_dropout"),
    }


def pretrain_record(
    *,
    source: Path | str | None,
    steps: int,
    mask_prob: float | None,
    loss: str | None,
    masked_acc: float | None = None,
    time_s: float | None = None,
) -> dict[str, Any]:
    """summary.json's ``pretrain`` record of a self-pretrained run (module docstring); ``source``: the
    weights file of ``pretrain.from``, None when the job pretrained itself."""
    return {
        "mode": "masked",
        "from": None if source is None else str(source),
        "steps": steps,
        "mask_prob": mask_prob,
        "loss": loss,
        "masked_acc": masked_acc,
        "time_s": time_s,
    }


def planned_pretrain(pretrain: dict[str, Any] | None) -> dict[str, Any] | None:
    """The ``pretrain`` record of a run whose pretraining has not run (yet), from its plain ``pretrain``
    config node: None for a run from scratch."""
    if (pretrain or {}).get("mode") != "masked":
        return None
    return pretrain_record(
        source=pretrain.get("from"), steps=0, mask_prob=pretrain.get("mask_prob"), loss=pretrain.get("loss")
    )


def pretrain_metrics(pretrain: dict[str, Any] | None) -> dict[str, Any]:
    """The metrics a ``pretrain`` record adds to summary.json (none for a run from scratch)."""
    if pretrain is None:
        return {}
    return {
        "perf/pretrain_time_s": pretrain["time_s"],
        "val/pretrain_acc": pretrain["masked_acc"],
        "pretrain/steps": pretrain["steps"],
    }


def make_summary(
    record: SummaryRecord,
    *,
    status: str,
    error: str | None,
    metrics: dict[str, float | int | None],
    device: str,
    started: str,
    output_dir: Path,
    data: dict[str, Any] | None = None,
    resumed_from: Path | None = None,
    pretrain: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The summary.json record of one run, named by ``record`` (its ``job``: the ``name``, varied
    ``options`` and ``fingerprint`` of ``lra.job.run_identity.job_record``); ``pretrain``: what its
    pretraining stage recorded (None: what its config plans, ``planned_pretrain``). The record::

        {"schema": SCHEMA (2: no "pretrain"; a summary without it is schema 1: no majority_share, no
                   test/*_final),
         "task", "attention", "seed" (seeds the model, the training order and every random draw),
         "status": one of STATUSES, "error",
         "metrics": {METRIC_KEYS: test/acc, test/loss of the checkpoint selected on validation,
                     test/*_final of the final weights; "perf/peak_gpu_mem_mb" or "perf/peak_rss_mb";
                     train/steps and perf/* are fine-tuning's; a self-pretrained run adds
                     "perf/pretrain_time_s", "val/pretrain_acc", "pretrain/steps"},
         "config": {resolved}, "versions", "device", "git_commit", "started", "finished", "output_dir",
         "data": {"dataset", "set", "source", "seed", "command", "majority_share": {split: share}}
                 (the dataset recipe, the prepared set used, its source, its generator/split seed,
                 the command that rebuilds it, each split's share of its most frequent label, 0-1:
                 what a run at chance scores; null when the run stopped before loading it),
         "protocol": protocol_record, "resumed_from": the checkpoint this segment continued from or null,
         "pretrain": null for a run from scratch, else {"mode": "masked", "from": the weights file of
                 pretrain.from, or null when the job pretrained itself, "steps": pretraining steps run,
                 "mask_prob", "loss": "ce"|"l1", "masked_acc": the masked-token accuracy on the val
                 split's inputs of the weights fine-tuning started from (0-1, or null), "time_s":
                 pretraining seconds, or null} (docs/pretraining.md),
         "name": "{task}-{attention}[-{option}={value}...]-s{seed}", "options": {varied option: value},
         "overrides": [the keys its command line set, less IGNORED_KEYS: what a report's label names],
         "preset": the experiment= preset it trained under, or null,
         "fingerprint": the hash of what it computes (lra.job.run_identity.job_fingerprint)}
    """
    if status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
    config = record.config
    pretrain = planned_pretrain(config.get("pretrain")) if pretrain is None else pretrain
    return {
        "schema": SCHEMA,
        "task": record.task,
        "attention": record.attention,
        "seed": record.seed,
        "status": status,
        "error": error,
        "metrics": {**dict.fromkeys(METRIC_KEYS), **metrics, **pretrain_metrics(pretrain)},
        "config": config,
        "versions": versions(),
        "device": device,
        "git_commit": git_commit(),
        "started": started,
        "finished": now_iso(),
        "output_dir": str(output_dir.resolve()),
        "data": data,
        "protocol": protocol_record(config),
        "resumed_from": None if resumed_from is None else str(resumed_from),
        "pretrain": pretrain,
        **record.job,
    }


def write_summary(summary: dict[str, Any], output_dir: Path) -> Path:
    """Write ``output_dir/summary.json`` atomically."""
    return write_json(output_dir / SUMMARY_FILE, summary)


POINTER_FILE = "resumed.json"  # in a job folder whose run went on (or had completed) in another folder
RUN_FILE = "run.json"  # in a run's own folder: its config and identity (lra.job.resume.record_plan)


def run_folder(job_dir: Path) -> Path:
    """Where a job folder's run trains: the folder itself, or the one its ``resumed.json`` points to
    (a resumed or skipped job)."""
    try:
        return Path(json.loads((job_dir / POINTER_FILE).read_text())["continues"])
    except (OSError, ValueError, KeyError):
        return job_dir


def job_summary_file(job_dir: Path) -> Path | None:
    """The summary.json of a job folder's run (``run_folder``); None when there is none (yet)."""
    own = job_dir / SUMMARY_FILE
    target = own if own.is_file() else run_folder(job_dir) / SUMMARY_FILE
    return target if target.is_file() else None


def read_summaries(
    directory: Path, unwritten: Callable[[Path], dict[str, Any] | None] | None = None
) -> list[dict[str, Any]]:
    """The summary of every job folder in the sweep folder ``directory``, in job order; a run folder
    whose summary.json is missing or stale gets what ``unwritten`` makes of it, where it makes one."""
    folders = sorted(
        (path for path in directory.iterdir() if path.is_dir()), key=lambda p: job_number(p.name)
    )
    files = [job_summary_file(folder) for folder in folders]
    runs = [file.parent if file else run_folder(folder) for file, folder in zip(files, folders, strict=True)]
    summaries = []
    for run_dir in dict.fromkeys(runs):  # a run that a later job continued: once
        stand_in = unwritten(run_dir) if unwritten else None
        if stand_in is not None or (run_dir / SUMMARY_FILE).is_file():
            summaries.append(stand_in or json.loads((run_dir / SUMMARY_FILE).read_text()))
    return summaries


def job_number(folder_name: str) -> tuple[int, str]:
    """Sort key of a multirun job folder ``{num}_{task}-{attention}-s{seed}``."""
    head = folder_name.split("_", 1)[0]
    return (int(head), folder_name) if head.isdigit() else (sys.maxsize, folder_name)
