"""The paper presets train step for step as the authors' released training loops.

The loops are re-stated here in plain PyTorch from their description (Skyformer's ``src/main.py``,
Nyströmformer's ``LRA/code/run_tasks.py``): AdamW (betas 0.9/0.999, eps 1e-6, no weight decay),
torch's OneCycleLR (``max_lr`` = lr, ``pct_start`` = warmup / steps, linear annealing, its default
momentum cycling of β₁) stepped after every optimizer step, the mean cross-entropy, and for Skyformer
``clip_grad_value_`` before the step. From the same initial weights and the same batches (all dropout
off), the harness under the preset must give the same training loss at every step.
"""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import lightning as L
import pytest
import torch
import torch.nn.functional as F
from conftest import compose_config, smoke_overrides
from helpers.records import module_of
from torch import nn

from lra.job.resolve import data_record
from lra.job.train import build_datamodule, run

STEPS, WARMUP, LR = 40, 10, 3e-3  # a learning rate large enough for the schedule and β₁ to show in the losses
RELATIVE_TOLERANCE = 1e-5


def preset_config(data_root: Path, experiment: str, *extra: str, task: str = "listops"):
    """``experiment`` on the tiny set of ``task``: 40 steps, dropout off, one evaluation at the end."""
    overrides = [
        f"experiment={experiment}",
        f"trainer.max_steps={STEPS}",
        f"task.warmup_steps={WARMUP}",
        f"task.lr={LR}",
        f"task.eval_every={STEPS}",
        "model.dropout=0.0",
        "protocol.attention_dropout=0.0",
        *extra,
    ]
    return compose_config(smoke_overrides(data_root, task, "standard", *overrides))


def reference_loop(model: nn.Module, batches: list, clip_value: float | None) -> list[float]:
    """The authors' training loop: per-step mean cross-entropy losses."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=LR, pct_start=WARMUP / STEPS, anneal_strategy="linear", total_steps=STEPS
    )
    return train_steps(model, batches, optimizer, schedule, clip_value)


def train_steps(model, batches, optimizer, schedule, clip_value: float | None = None) -> list[float]:
    """One optimizer and schedule step per batch (value clipping first when ``clip_value``): per-step
    mean cross-entropy losses."""
    model.train()
    losses = []
    for tokens, lengths, labels in batches:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(tokens, lengths), labels)
        loss.backward()
        if clip_value is not None:
            nn.utils.clip_grad_value_(model.parameters(), clip_value=clip_value)
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
    return losses


def harness_start(cfg) -> tuple[nn.Module, list]:
    """The harness's initial model and the first ``STEPS`` training batches it draws."""
    L.seed_everything(cfg.seed, verbose=False)  # as lra.job.train.run does before building
    model = module_of(cfg).model
    datamodule = build_datamodule(data_record(cfg, cfg.task.batch_size))
    datamodule.setup("fit")
    loader = datamodule.train_dataloader()
    batches = []
    for epoch in itertools.count():  # Lightning sets each epoch's number on the sampler
        if len(batches) >= STEPS:
            break
        loader.sampler.set_epoch(epoch)
        batches += list(loader)
    return model, batches[:STEPS]


def reference_losses(cfg, clip_value: float | None) -> list[float]:
    """The reference loop on the harness's initial weights and on the batches the harness draws."""
    model, batches = harness_start(cfg)
    return reference_loop(model, batches, clip_value)


def harness_losses(cfg, out: Path) -> list[float]:
    """Per-step ``train/loss`` of a harness run (the CSV logger writes every step in a fast dev run)."""
    summary = run(cfg, out)
    assert summary["status"] == "completed", summary["error"]
    with open(out / "csv" / "metrics.csv") as handle:
        rows = [row for row in csv.DictReader(handle) if row["train/loss"]]
    return [float(row["train/loss"]) for row in sorted(rows, key=lambda row: int(row["step"]))]


def relative_gaps(ours: list[float], theirs: list[float]) -> list[float]:
    assert len(ours) == len(theirs) == STEPS
    return [abs(a - b) / abs(b) for a, b in zip(ours, theirs, strict=True)]


@pytest.mark.parametrize(
    ("experiment", "clip_value"),
    [("skyformer", 1.0), ("nystromformer", None)],
)
def test_preset_trains_as_the_authors_loop(data_root, tmp_path, experiment, clip_value):
    cfg = preset_config(data_root, experiment)
    theirs = reference_losses(cfg, clip_value)
    ours = harness_losses(cfg, tmp_path / "run")
    assert max(relative_gaps(ours, theirs)) < RELATIVE_TOLERANCE
    assert theirs[0] != theirs[-1]  # the losses move: the comparison is not of a constant


def test_clipping_by_value_matches_where_it_bites(data_root, tmp_path):
    """At a clip value small enough to clip every step, value clipping matches and norm clipping does not."""
    small = 1e-3
    cfg = preset_config(data_root, "skyformer", f"protocol.clip_value={small}")
    theirs = reference_losses(cfg, small)
    assert max(relative_gaps(harness_losses(cfg, tmp_path / "value"), theirs)) < RELATIVE_TOLERANCE
    by_norm = preset_config(data_root, "skyformer", f"protocol.clip_value={small}", "protocol.clip=norm")
    assert max(relative_gaps(harness_losses(by_norm, tmp_path / "norm"), theirs)) > 100 * RELATIVE_TOLERANCE


def test_the_comparison_tells_another_schedule_apart(data_root, tmp_path):
    """The task default (linear warm-up and decay) does not pass for the authors' one-cycle loop."""
    cfg = preset_config(data_root, "nystromformer", "protocol.schedule=warmup_linear")
    theirs = reference_losses(cfg, None)
    assert max(relative_gaps(harness_losses(cfg, tmp_path / "run"), theirs)) > 100 * RELATIVE_TOLERANCE
