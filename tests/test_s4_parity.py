"""``experiment=s4`` trains step for step as the S4 repository's training step, and its model computes
as their backbone.

Their step, re-stated here in plain PyTorch from state-spaces/s4 ``train.py`` and its configs:
``add_optimizer_hooks`` marks the backbone's biases and normalisation weights ``weight_decay 0``; the
kernel registers dt and A with their own ``{lr, weight_decay 0}`` (dt with none when ``lr.dt`` is null),
and C with ``{lr}`` alone where ``layer.lr`` is one float, as on Image (``SSMKernelDiag`` registers C
with ``lr_dict['C']`` and no weight decay); torch's AdamW (betas 0.9/0.999, its default eps 1e-8, weight
decay 0.05) takes the unmarked parameters and one group per distinct mark; transformers'
``get_cosine_schedule_with_warmup`` is stepped after every optimizer step; no clipping. From the same
initial weights and batches the harness must give the same training loss at every step, on ListOps
(``lr`` a dict) and on Image (``lr`` a float; the dropouts off).
"""

from __future__ import annotations

import math

import pytest
import torch
from conftest import compose_config, smoke_overrides
from test_protocol_parity import STEPS, harness_losses, harness_start, relative_gaps, train_steps
from torch import nn

from lra.model.encoder import padding_mask

WARMUP, LR, SSM_LR, WEIGHT_DECAY = 10, 1e-2, 1e-3, 0.05  # s4-listops.yaml's rates, a short warm-up
RELATIVE_TOLERANCE = 1e-5
SSM = {"weight_decay": 0.0, "lr": SSM_LR}
# Their kernel's marks by the s4d mixer's parameter names: s4-listops.yaml's layer.lr {dt: null, A: 0.001,
# B: 0.001} (dt at the run's rate, C unmarked); s4-cifar.yaml's layer.lr 0.001 (every key, C's too).
THEIR_MARKS = {
    "listops": {"log_dt": {"weight_decay": 0.0}, "log_A_real": SSM, "A_imag": SSM},
    "image": {"log_dt": SSM, "log_A_real": SSM, "A_imag": SSM, "C": {"lr": SSM_LR}},
}
NO_DROPOUT = ("attention.dropout=0.0", "attention.conv_dropout=0.0", "model.mixer_dropout=0.0")


def s4_config(data_root, *extra: str, task: str = "listops"):
    """``experiment=s4`` on the tiny set of ``task`` at a small size, dropout off: 40 steps, one
    evaluation at the end."""
    overrides = [
        "experiment=s4",
        f"trainer.max_steps={STEPS}",
        f"task.warmup_steps={WARMUP}",
        f"task.eval_every={STEPS}",
        "model.dim=16",
        "model.depth=2",
        *NO_DROPOUT,
        *extra,
    ]
    return compose_config(smoke_overrides(data_root, task, "s4d", *overrides))


def their_groups(model: nn.Module, task: str) -> list[dict]:
    """AdamW's parameter groups as their ``configure_optimizers`` builds them (module docstring)."""
    marks: dict[nn.Parameter, dict] = {}
    for backbone in (model.encoder.blocks, model.encoder.norm):  # their self.model
        for module in backbone.modules():
            for name, parameter in module.named_parameters():
                if name.endswith("bias") or isinstance(module, (nn.BatchNorm1d, nn.LayerNorm)):
                    marks[parameter] = {"weight_decay": 0.0}
    for name, parameter in model.named_parameters():
        mark = THEIR_MARKS[task].get(name.rsplit(".", 1)[-1])
        if mark is not None:
            marks[parameter] = mark
    groups = [{"params": [p for p in model.parameters() if p not in marks]}]
    for mark in {tuple(sorted(mark.items())) for mark in marks.values()}:
        groups.append(
            {"params": [p for p, m in marks.items() if tuple(sorted(m.items())) == mark], **dict(mark)}
        )
    return groups


def cosine_with_warmup(step: int, warmup: int, total: int) -> float:
    """transformers' ``get_cosine_schedule_with_warmup`` factor, ``num_cycles`` 0.5."""
    if step < warmup:
        return step / max(1, warmup)
    progress = (step - warmup) / max(1, total - warmup)
    return max(0.0, 0.5 * (1.0 + math.cos(math.pi * 0.5 * 2.0 * progress)))


def their_losses(model: nn.Module, batches: list, task: str = "listops") -> list[float]:
    """Their training step over ``batches``: per-step cross-entropy losses."""
    optimizer = torch.optim.AdamW(
        their_groups(model, task), lr=LR, betas=(0.9, 0.999), weight_decay=WEIGHT_DECAY
    )
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: cosine_with_warmup(s, WARMUP, STEPS))
    return train_steps(model, batches, optimizer, schedule)


@pytest.mark.parametrize("task", THEIR_MARKS)
def test_s4_preset_trains_as_their_step(data_root, tmp_path, task):
    cfg = s4_config(data_root, task=task)
    assert (cfg.task.lr, cfg.attention.lr) == (LR, SSM_LR)  # the preset's rates on both tasks
    theirs = their_losses(*harness_start(cfg), task)
    ours = harness_losses(cfg, tmp_path / "run")
    assert max(relative_gaps(ours, theirs)) < RELATIVE_TOLERANCE
    assert theirs[0] != theirs[-1]  # the losses move: the comparison is not of a constant


@pytest.mark.parametrize(
    "other",
    [
        "protocol.schedule=warmup_linear",
        "attention.lr=null",
        "attention.dt_lr=null",
        "model.decay_norms_biases=true",
    ],
)
def test_the_comparison_tells_other_settings_apart(data_root, tmp_path, other):
    """Another schedule, the SSM parameters at another rate, or weight decay on the backbone's norms and
    biases do not pass for their step."""
    theirs = their_losses(*harness_start(s4_config(data_root)))
    ours = harness_losses(s4_config(data_root, other), tmp_path / "run")
    assert max(relative_gaps(ours, theirs)) > 100 * RELATIVE_TOLERANCE


def test_the_comparison_tells_C_at_the_runs_rate_apart(data_root, tmp_path):
    """On Image, C at the run's rate (the S4 repository before 070384a) does not pass for their step."""
    theirs = their_losses(*harness_start(s4_config(data_root, task="image")), "image")
    ours = harness_losses(s4_config(data_root, "attention.c_lr=null", task="image"), tmp_path / "run")
    assert max(relative_gaps(ours, theirs)) > 100 * RELATIVE_TOLERANCE


def their_backbone(model: nn.Module, tokens: torch.Tensor, lengths: torch.Tensor, prenorm: bool):
    """Their forward pass on the harness's modules: the embedding (no positions), each
    ``SequenceResidualBlock`` (norm around the layer, residual), the final norm after pre-norm blocks
    only, the mean over the real positions (``use_lengths``) and one Linear: (B, L) -> (B, classes)."""
    mask = padding_mask(lengths, tokens.shape[1])
    x = model.encoder.token_embedding(tokens)
    for block in model.encoder.blocks:
        norm, layer = block.attention_norm, block.attention
        x = x + layer(norm(x), mask) if prenorm else norm(x + layer(x, mask))
    if prenorm:
        x = model.encoder.norm(x)
    pooled = torch.stack([states[:length].mean(dim=0) for states, length in zip(x, lengths, strict=True)])
    (linear,) = model.classifier
    return linear(pooled)


@pytest.mark.parametrize("prenorm", [True, False])
def test_s4_preset_model_computes_as_their_backbone(data_root, prenorm):
    cfg = s4_config(data_root, f"model.prenorm={str(prenorm).lower()}")
    model, batches = harness_start(cfg)
    tokens, lengths, _ = batches[0]
    model.train()  # BatchNorm on the batch's statistics, as in training
    torch.testing.assert_close(model(tokens, lengths), their_backbone(model, tokens, lengths, prenorm))
