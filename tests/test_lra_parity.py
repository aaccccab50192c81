"""``experiment=lra`` trains step for step as the LRA code's ``train_step`` (``helpers.lra_step``).

From the same initial weights and batches (all dropout off), the harness under the preset must give
the training loss of the restated step at each of 40 steps, within 1e-5 relative: on ListOps (the
rsqrt schedule with warm-up, weight decay 0.1, sinusoidal positions) and on Image (the cosine
schedule over all the steps, learned positions), both with a CLS token and the classifier head. The
model is shrunk so that the check is fast; the preset's sizes are checked apart.
"""

from __future__ import annotations

from functools import partial

import pytest
from helpers.lra_step import lra_rate, their_losses
from test_protocol_parity import (
    RELATIVE_TOLERANCE,
    harness_losses,
    harness_start,
    preset_config,
    relative_gaps,
)

SMALL_MODEL = (
    "model.dim=32",
    "model.depth=2",
    "model.num_heads=2",
    "model.qkv_dim=32",
    "model.ffn_dim=64",
    "model.classifier_dim=64",
)
# the schedule's constant: ListOps' rsqrt peak is 0.01/√10 ≈ 3e-3; Image's cosine peaks at 3e-3
CONSTANT = {"listops": 0.01, "image": 3e-3}
FACTORS = {"warmup_rsqrt": "rsqrt_decay", "warmup_cosine": "cosine_decay"}


def lra_config(data_root, task: str, *extra: str):
    """``experiment=lra`` on the tiny set of ``task``, a small model, dropout off, 40 steps."""
    return preset_config(data_root, "lra", f"task.lr={CONSTANT[task]}", *SMALL_MODEL, *extra, task=task)


def their_run(cfg) -> list[float]:
    """Their step from the harness's initial weights on the batches the harness draws."""
    rate = partial(
        lra_rate, FACTORS[cfg.protocol.schedule], base=cfg.task.lr, warmup=cfg.task.warmup_steps,
        steps_per_cycle=cfg.trainer.max_steps,
    )  # fmt: skip
    model, batches = harness_start(cfg)
    return their_losses(model, batches, rate, cfg.task.weight_decay)


@pytest.mark.parametrize(
    ("task", "schedule", "weight_decay", "learned_positions"),
    [("listops", "warmup_rsqrt", 0.1, False), ("image", "warmup_cosine", 0.0, True)],
)
def test_lra_preset_trains_as_their_step(
    data_root, tmp_path, task, schedule, weight_decay, learned_positions
):
    cfg = lra_config(data_root, task)
    assert (cfg.protocol.schedule, cfg.task.weight_decay) == (schedule, weight_decay)  # the preset's
    assert (cfg.model.cls_token, cfg.model.pooling, cfg.model.learn_pos_emb) == (
        True,
        "first",
        learned_positions,
    )
    theirs = their_run(cfg)
    assert max(relative_gaps(harness_losses(cfg, tmp_path / "run"), theirs)) < RELATIVE_TOLERANCE
    assert theirs[0] != theirs[-1]  # the losses move: the comparison is not of a constant


@pytest.mark.parametrize(
    "other",
    [
        "protocol.adam_betas=[0.9,0.999]",
        "model.pooling=mean",
        "protocol.schedule=warmup_linear",
        "task.weight_decay=0.0",
    ],
)
def test_the_comparison_tells_other_settings_apart(data_root, tmp_path, other):
    """Torch's default betas, mean pooling, another schedule or no weight decay do not pass."""
    theirs = their_run(lra_config(data_root, "listops"))
    ours = harness_losses(lra_config(data_root, "listops", other), tmp_path / "run")
    assert max(relative_gaps(ours, theirs)) > 100 * RELATIVE_TOLERANCE
