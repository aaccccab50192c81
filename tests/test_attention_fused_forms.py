"""nystrom and skyformer through fused attention calls, and performer without kept copies, compute the
same functions as their previous forms (kernels formed in memory, ``helpers.previous_forms``): value
and gradients within 1e-5 relative on padded inputs, with the same landmarks, weights and features;
the iterative inverse with fused steps equals its previous form.
"""

from __future__ import annotations

import pytest
import torch
from helpers.previous_forms import PREVIOUS, previous_iterative_pinv

import attention_zoo
from attention_zoo.cores.pinv import iterative_pinv
from attention_zoo.saved_memory import saved_tensor_bytes

HEADS, HEAD_DIM, SEQ = 2, 16, 70
LENGTHS = [SEQ, 37, 0]  # full, padded, fully padded
OPTIONS = {  # small budgets, a length no budget divides
    "nystrom": {"num_landmarks": 8, "conv_kernel_size": 5},
    "nystrom-divisible": {"num_landmarks": 10, "conv_kernel_size": 5},  # 10 segments of 7
    "skyformer": {"num_landmarks": 24},
    "performer": {"num_features": 40},
    "performer-authors": {"num_features": 40, "temperature": "d", "feature_epsilon": 1e-4},
}


def build(label: str, **overrides):
    torch.manual_seed(0)
    name = label.split("-")[0]
    options = OPTIONS[label] | overrides
    core = attention_zoo.build_attention(name, head_dim=HEAD_DIM, num_heads=HEADS, seq_len=SEQ, **options)
    if getattr(core, "conv", None) is not None:
        torch.nn.init.normal_(core.conv.weight)
    return core


def inputs(seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (
        torch.randn(len(LENGTHS), HEADS, SEQ, HEAD_DIM, generator=gen).requires_grad_(True) for _ in range(3)
    )
    mask = torch.arange(SEQ)[None, :] < torch.tensor(LENGTHS)[:, None]
    return q, k, v, mask


def value_and_gradients(function, core, weights: torch.Tensor) -> list[torch.Tensor]:
    q, k, v, mask = inputs()
    core.zero_grad()
    torch.manual_seed(1)  # skyformer's landmarks: the same rows for both forms
    out = function(q, k, v, mask)
    (out * weights).sum().backward()
    params = [p.grad.clone() for p in core.parameters()]
    return [out.detach(), q.grad, k.grad, v.grad, *params]


def relative_error(approx: torch.Tensor, exact: torch.Tensor) -> float:
    return ((approx - exact).norm() / exact.norm().clamp_min(1e-30)).item()


@pytest.mark.parametrize("label", list(OPTIONS))
def test_new_form_equals_the_previous_form_in_value_and_gradient(label):
    core = build(label)
    previous = PREVIOUS[label.split("-")[0]]
    weights = torch.randn(len(LENGTHS), HEADS, SEQ, HEAD_DIM, generator=torch.Generator().manual_seed(9))
    new = value_and_gradients(core, core, weights)
    old = value_and_gradients(lambda *args: previous(core, *args), core, weights)
    names = ["out", "dq", "dk", "dv"] + [f"d{name}" for name, _ in core.named_parameters()]
    errors = {name: relative_error(a, b) for name, a, b in zip(names, new, old, strict=True)}
    assert max(errors.values()) < 1e-5, errors


@pytest.mark.parametrize("label", ["nystrom", "skyformer", "performer-authors"])
def test_backward_keeps_less_than_the_previous_form(label):
    """With budgets above head_dim, as in the presets (the (N × m) kernels outweigh (N × D) outputs)."""
    core = build(label, num_landmarks=32) if label == "nystrom" else build(label)
    previous = PREVIOUS[label.split("-")[0]]
    q, k, v, mask = inputs()
    torch.manual_seed(1)
    held = (q, k, v, *core.buffers(), *core.parameters())
    new = saved_tensor_bytes(lambda: core(q, k, v, mask), held)
    torch.manual_seed(1)
    old = saved_tensor_bytes(lambda: previous(core, q, k, v, mask), held)
    assert new < old, (new, old)


@pytest.mark.parametrize("shape", [(6, 6), (3, 6, 6), (2, 2, 8, 5)])
def test_iterative_pinv_with_fused_steps_equals_its_previous_form(shape):
    matrix = torch.softmax(torch.randn(shape, generator=torch.Generator().manual_seed(3)), dim=-1)
    matrix.requires_grad_(True)
    weights = torch.randn(*shape[:-2], shape[-1], shape[-2], generator=torch.Generator().manual_seed(4))
    new, old = iterative_pinv(matrix, 6), previous_iterative_pinv(matrix, 6)
    new_grad, old_grad = (torch.autograd.grad((inverse * weights).sum(), matrix)[0] for inverse in (new, old))
    assert new.shape == old.shape
    assert relative_error(new, old) < 1e-5
    assert relative_error(new_grad, old_grad) < 1e-5
