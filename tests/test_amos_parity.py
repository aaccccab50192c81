"""experiment=amos trains step for step as Amos et al.'s released code (IdoAmos/not-from-scratch).

Their two stages are re-stated here in plain PyTorch from their configs and code: torch's AdamW (betas
0.9/0.999, eps 1e-8, the task's weight decay on every parameter), transformers'
``get_constant_schedule_with_warmup`` (``step / warmup`` below the warm-up, then 1) stepped after every
optimizer step, no clipping; fine-tuning scores the mean cross-entropy of the labels, pretraining replaces
the chosen tokens by ``[MASK]`` and scores a linear head at those positions only (cross-entropy over the
vocabulary, or L1 against the grey level / 255 for Image). From the same initial weights, batches and
masked positions (all dropout off, as theirs), the harness under the preset must give the same loss at
every step. The model is shrunk so that the check is fast; the preset's sizes are checked apart.
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from conftest import compose_config, smoke_overrides
from helpers.records import model_of
from test_protocol_parity import (
    LR,
    RELATIVE_TOLERANCE,
    STEPS,
    WARMUP,
    harness_losses,
    harness_start,
    relative_gaps,
)
from test_resume import csv_rows
from torch import nn

from lra.job.train import run
from lra.model import pretraining

SMALL_MODEL = ("model.dim=32", "model.depth=2", "model.num_heads=2", "model.ffn_dim=64")
WEIGHT_DECAY = 0.1  # nonzero, so that the decay takes part in the comparison


def amos_config(data_root, task: str, *extra: str):
    """``experiment=amos`` on the tiny set of ``task``, a small model, 40 steps of each stage at most."""
    overrides = [
        "experiment=amos",
        f"trainer.max_steps={STEPS}",
        f"task.warmup_steps={WARMUP}",
        f"task.lr={LR}",
        f"task.eval_every={STEPS}",
        f"task.weight_decay={WEIGHT_DECAY}",
        *SMALL_MODEL,
        *extra,
    ]
    return compose_config(smoke_overrides(data_root, task, "standard", *overrides))


def their_schedule(optimizer: torch.optim.Optimizer, warmup: int) -> torch.optim.lr_scheduler.LambdaLR:
    """transformers.get_constant_schedule_with_warmup (their scheduler/constant_warmup.yaml)."""
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: step / max(1, warmup) if step < warmup else 1.0
    )


def their_steps(parameters, lr: float, weight_decay: float, warmup: int, losses: list) -> list[float]:
    """One optimizer step per loss function of ``losses``, as their train.py: torch's AdamW of their
    optimizer/adamw.yaml (its default eps, decay on every parameter), their schedule stepped after every
    step, no clipping; the per-step losses."""
    optimizer = torch.optim.AdamW(parameters, lr=lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=weight_decay)
    schedule = their_schedule(optimizer, warmup)
    values = []
    for loss_of in losses:
        optimizer.zero_grad()
        loss = loss_of()
        loss.backward()
        optimizer.step()
        schedule.step()
        values.append(loss.item())
    return values


def their_finetuning(cfg) -> list[float]:
    """Their fine-tuning loop from the harness's initial weights on the batches the harness draws:
    per-step mean cross-entropy losses."""
    model, batches = harness_start(cfg)
    model.train()
    steps = [lambda batch=batch: F.cross_entropy(model(*batch[:2]), batch[2]) for batch in batches]
    return their_steps(model.parameters(), cfg.task.lr, cfg.task.weight_decay, cfg.task.warmup_steps, steps)


@pytest.mark.slow
def test_finetuning_trains_as_their_loop(data_root, tmp_path):
    cfg = amos_config(data_root, "listops")
    theirs = their_finetuning(cfg)
    assert max(relative_gaps(harness_losses(cfg, tmp_path / "run"), theirs)) < RELATIVE_TOLERANCE
    assert theirs[0] != theirs[-1]


@pytest.mark.slow
def test_the_comparison_tells_the_harness_warmup_apart(data_root, tmp_path):
    """``warmup_constant`` (``(s + 1) / warmup``) is one step ahead of theirs and does not pass."""
    cfg = amos_config(data_root, "listops", "protocol.schedule=warmup_constant")
    theirs = their_finetuning(amos_config(data_root, "listops"))
    assert max(relative_gaps(harness_losses(cfg, tmp_path / "run"), theirs)) > 100 * RELATIVE_TOLERANCE


class PretrainingRecorder:
    """Records what the harness's pretraining stage trains on: its initial weights (encoder and head),
    and per step the batch and the positions it masks."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.initial: dict[str, dict] = {}
        self.steps: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []
        self.batch: tuple[torch.Tensor, torch.Tensor] | None = None
        draw, step = pretraining.choose_masked, pretraining.MaskedPretrainModule.training_step

        def choose_masked(real, prob, generator=None):
            chosen = draw(real, prob, generator)
            if generator is None:  # a training step's masks (validation's come from a seeded generator)
                tokens, lengths = self.batch
                self.steps.append((tokens, lengths, chosen.clone()))
            return chosen

        def training_step(module, batch, batch_idx):
            if not self.initial:
                self.initial = {
                    "encoder": copy.deepcopy(module.encoder.state_dict()),
                    "head": copy.deepcopy(module.objective.state_dict()),
                }
            self.batch = tuple(part.clone() for part in pretraining.sequences(batch))
            return step(module, batch, batch_idx)

        monkeypatch.setattr(pretraining, "choose_masked", choose_masked)
        monkeypatch.setattr(pretraining.MaskedPretrainModule, "training_step", training_step)


def their_pretraining(cfg, recorded: PretrainingRecorder) -> list[float]:
    """Their masked pretraining from the recorded weights, batches and masks: per-step losses."""
    encoder = model_of(cfg).encoder
    encoder.load_state_dict(recorded.initial["encoder"])
    vocab = cfg.task.vocab_size
    l1 = cfg.pretrain.loss == "l1"
    head = nn.Linear(cfg.model.dim, 1 if l1 else vocab)
    head.load_state_dict(
        {key.removeprefix("head."): value for key, value in recorded.initial["head"].items()}
    )
    encoder.train()

    def masked_loss(tokens: torch.Tensor, lengths: torch.Tensor, chosen: torch.Tensor) -> torch.Tensor:
        real = torch.arange(tokens.shape[1])[None, :] < lengths[:, None]
        states = encoder(tokens.masked_fill(chosen, vocab), real)[chosen]  # [MASK] is the id vocab
        targets = tokens[chosen]
        if l1:  # masked_mae on pixels in [0, 1]
            return F.l1_loss(head(states).squeeze(-1), targets.float() / (vocab - 1))
        return F.cross_entropy(head(states), targets)  # ignore_index at the unmasked positions

    steps = [lambda step=step: masked_loss(*step) for step in recorded.steps]
    parameters = [*encoder.parameters(), *head.parameters()]
    return their_steps(parameters, cfg.pretrain.lr, cfg.task.weight_decay, cfg.pretrain.warmup_steps, steps)


@pytest.mark.slow
@pytest.mark.parametrize("task", ["listops", "image"])
def test_pretraining_trains_as_their_loop(data_root, tmp_path, monkeypatch, task):
    cfg = amos_config(
        data_root,
        task,
        "pretrain=masked",
        f"pretrain.steps={STEPS}",
        f"pretrain.warmup_steps={WARMUP}",
        f"pretrain.lr={LR}",
        "pretrain.batch_size=8",
    )
    recorded = PretrainingRecorder(monkeypatch)
    summary = run(cfg, tmp_path / "run")
    assert summary["status"] == "completed", summary["error"]
    ours = [loss for _, loss in csv_rows(tmp_path / "run", "pretrain/loss")]
    assert len(recorded.steps) == STEPS and any(chosen.any() for *_, chosen in recorded.steps)
    theirs = their_pretraining(cfg, recorded)
    assert max(relative_gaps(ours, theirs)) < RELATIVE_TOLERANCE
    assert theirs[0] != theirs[-1]


@pytest.mark.slow
def test_the_comparison_tells_the_pretraining_warmup_apart(data_root, tmp_path, monkeypatch):
    """The pretraining stage follows ``pretrain.schedule``: the harness's default does not pass."""
    options = ["pretrain=masked", f"pretrain.steps={STEPS}", f"pretrain.warmup_steps={WARMUP}"]
    cfg = amos_config(
        data_root, "listops", *options, f"pretrain.lr={LR}", "pretrain.schedule=warmup_constant"
    )
    recorded = PretrainingRecorder(monkeypatch)
    assert run(cfg, tmp_path / "run")["status"] == "completed"
    ours = [loss for _, loss in csv_rows(tmp_path / "run", "pretrain/loss")]
    assert max(relative_gaps(ours, their_pretraining(cfg, recorded))) > 100 * RELATIVE_TOLERANCE
