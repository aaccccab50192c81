"""The LRA code's training step (google-research/long-range-arena, ``lra_benchmarks/``) restated in
plain PyTorch, on the parameters of the harness's model:

- the learning rate: ``utils/train_utils.py`` ``create_learning_rate_scheduler`` (lines 94-149),
  evaluated at ``optimizer.state.step``, which counts from 0 (``listops/train.py`` line 116-117);
- the optimizer: Flax's ``optim.Adam(beta1=0.9, beta2=0.98, eps=1e-9, weight_decay=wd)``
  (``listops/train.py`` lines 73-78, ``image/train.py`` lines 71-72) whose update (flax/optim/adam.py,
  removed in flax 0.6.0) is ``p − lr·m̂/(√v̂ + eps) − lr·wd·p``, from the old ``p``;
- the model around the blocks: ``models/transformer/transformer.py`` lines 150-219: the embedding,
  the zero CLS token in front (its mask the first token's), the positions (``common_layers.py``
  ``sinusoidal_init`` lines 54-77, or the learned table), the blocks, ``encoder_norm``, then
  ``common_layers.classifier_head`` (lines 166-194) with CLS pooling: ``Dense(mlp_dim)``, ReLU,
  ``Dense(classes)`` on the first position;
- the loss: ``compute_weighted_cross_entropy`` over one-hot targets, divided by the weight sum
  (the batch size; ``listops/train.py`` lines 111-113).

The blocks themselves are the harness's (their attention and MLP are checked apart).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

FLAX_ADAM = {"beta1": 0.9, "beta2": 0.98, "eps": 1e-9}


def lra_rate(factors: str, step: int, base: float, warmup: int, steps_per_cycle: int = 0) -> float:
    """``create_learning_rate_scheduler``'s ``step_fn`` for ``constant * linear_warmup * rsqrt_decay``
    (``factors="rsqrt_decay"``) and ``constant * linear_warmup * cosine_decay`` (``"cosine_decay"``)."""
    rate = base * min(1.0, step / warmup)  # constant * linear_warmup
    if factors == "rsqrt_decay":
        return rate / math.sqrt(max(step, warmup))
    progress = max(0.0, (step - warmup) / steps_per_cycle)  # cosine_decay
    return rate * max(0.0, 0.5 * (1.0 + math.cos(math.pi * (progress % 1.0))))


class FlaxAdam:
    """Flax's ``optim.Adam`` with ``weight_decay``: per parameter the moments' EMAs, bias-corrected by
    ``1 − β^t`` (t = step + 1), then ``p ← p − lr·m̂/(√v̂ + eps) − lr·wd·p``."""

    def __init__(self, parameters: list[torch.Tensor], weight_decay: float) -> None:
        self.parameters = parameters
        self.weight_decay = weight_decay
        self.ema = [torch.zeros_like(p) for p in parameters]
        self.sq_ema = [torch.zeros_like(p) for p in parameters]
        self.step = 0

    @torch.no_grad()
    def apply_gradient(self, lr: float) -> None:
        beta1, beta2, eps = FLAX_ADAM["beta1"], FLAX_ADAM["beta2"], FLAX_ADAM["eps"]
        t = self.step + 1
        for p, ema, sq_ema in zip(self.parameters, self.ema, self.sq_ema, strict=True):
            grad = torch.zeros_like(p) if p.grad is None else p.grad
            ema.mul_(beta1).add_((1 - beta1) * grad)
            sq_ema.mul_(beta2).add_((1 - beta2) * grad.square())
            denom = (sq_ema / (1 - beta2**t)).sqrt() + eps
            update = lr * (ema / (1 - beta1**t)) / denom + lr * self.weight_decay * p
            p.sub_(update)
        self.step += 1


def sinusoid_table(length: int, dim: int) -> torch.Tensor:
    """``sinusoidal_init``: sin on even features, cos on odd ones, of position · 10000^(-2i/dim):
    (length, dim)."""
    position = torch.arange(length, dtype=torch.float64)[:, None]  # (length, 1)
    div_term = torch.exp(torch.arange(0, dim, 2, dtype=torch.float64) * -(math.log(10000.0) / dim))
    table = torch.zeros(length, dim, dtype=torch.float64)
    table[:, 0::2] = torch.sin(position * div_term)
    table[:, 1::2] = torch.cos(position * div_term)
    return table.float()


def their_logits(model: nn.Module, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """``TransformerEncoder`` with ``classifier=True``, ``classifier_pool='CLS'`` on the harness's
    weights: tokens (B, L), lengths (B,) -> logits (B, classes)."""
    encoder = model.encoder
    batch, length = tokens.shape
    x = encoder.token_embedding.weight[tokens]  # (B, L, dim)
    x = torch.cat([encoder.cls.expand(batch, 1, -1), x], dim=1)  # (B, 1 + L, dim)
    real = torch.arange(length)[None, :] < lengths[:, None]  # (B, L)
    mask = torch.cat([real[:, :1], real], dim=1)  # (B, 1 + L): the CLS token takes the first's
    if encoder.position_embedding is None:
        x = x + sinusoid_table(length + 1, x.shape[-1])[None]
    else:  # learn_pos_emb: posemb_init normal(0.02), one row more for the CLS token
        x = x + encoder.position_embedding.weight[: length + 1][None]
    for block in encoder.blocks:
        x = block(x, mask)
    encoded = encoder.norm(x)[:, 0]  # encoder_norm, then CLS pooling: (B, dim)
    mlp, logits = (layer for layer in model.classifier if isinstance(layer, nn.Linear))
    return logits(torch.relu(mlp(encoded)))  # (B, classes)


def weighted_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """``compute_weighted_cross_entropy`` with no weights, over its weight sum: the batch mean."""
    onehot = nn.functional.one_hot(labels, logits.shape[-1]).to(logits.dtype)  # (B, classes)
    loss = -(onehot * torch.log_softmax(logits, dim=-1)).sum()
    return loss / len(labels)


def their_losses(
    model: nn.Module, batches: list, rate: Callable[[int], float], weight_decay: float
) -> list[float]:
    """Their ``train_step`` over ``batches`` (tokens, lengths, labels), dropout off: per-step losses."""
    model.train()
    parameters = [p for p in model.parameters() if p.requires_grad]
    optimizer = FlaxAdam(parameters, weight_decay)
    losses = []
    for tokens, lengths, labels in batches:
        for p in parameters:
            p.grad = None
        loss = weighted_cross_entropy(their_logits(model, tokens, lengths), labels)
        loss.backward()
        optimizer.apply_gradient(rate(optimizer.step))
        losses.append(loss.item())
    return losses
