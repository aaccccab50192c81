"""The delta rule's chunk form (``attention_zoo.parts.delta_chunks``): equal to its step-by-step form at
every chunk size, and to fla's naive references (issue 54), outputs and gradients, with and without the
decay of Gated DeltaNet."""

from __future__ import annotations

import pytest
import torch

from attention_zoo.parts.delta_chunks import chunked_delta_rule, l2_normalised, recurrent_delta_rule

FLA = 'flash-linear-attention is not installed: pip install -e ".[fla]"'


def delta_inputs(length: int, decay: bool, seed: int = 0, batch: int = 2, heads: int = 3) -> list:
    """q, k (B, L, H, 8), v (B, L, H, 6), beta in (0, 1), and (decay) log decays in (-1, 0) or None,
    each a leaf that takes a gradient."""
    generator = torch.Generator().manual_seed(seed)
    shapes = [(batch, length, heads, 8)] * 2 + [(batch, length, heads, 6)]
    tensors = [torch.randn(*shape, generator=generator) for shape in shapes]
    tensors.append(torch.rand(batch, length, heads, generator=generator))
    tensors.append(-torch.rand(batch, length, heads, generator=generator) if decay else None)
    return [t if t is None else t.requires_grad_() for t in tensors]


def outputs_and_gradients(form, inputs: list, weights: torch.Tensor) -> list[torch.Tensor]:
    """form(*inputs), then the gradient of Σ weights · form(*inputs) for every input."""
    out = form(*inputs)
    leaves = [t for t in inputs if t is not None]
    return [out.detach(), *torch.autograd.grad((out * weights).sum(), leaves)]


def assert_relative(ours: list[torch.Tensor], reference: list[torch.Tensor], tolerance: float) -> None:
    """Each tensor within ``tolerance`` of its reference, relative to the reference's largest entry."""
    for index, (a, b) in enumerate(zip(ours, reference, strict=True)):
        error = (a.float() - b.float()).abs().max() / b.abs().max()
        assert error <= tolerance, f"tensor {index}: relative error {error:.2e}"


@pytest.mark.parametrize("decay", [False, True], ids=["delta", "gated"])
@pytest.mark.parametrize(("length", "chunk"), [(37, 1), (37, 5), (100, 16), (100, 64), (23, 64)])
def test_the_chunk_form_is_the_recurrence(decay, length, chunk):
    """Chunks of every size, a length that is not a multiple of the chunk, one shorter than it."""
    inputs = delta_inputs(length, decay)
    weights = torch.randn(2, length, 3, 6, generator=torch.Generator().manual_seed(1))
    chunked = outputs_and_gradients(lambda *t: chunked_delta_rule(*t, chunk=chunk), inputs, weights)
    assert_relative(chunked, outputs_and_gradients(recurrent_delta_rule, inputs, weights), 1e-5)


def test_a_step_with_beta_and_decay_zero_leaves_the_state_as_it_is():
    q, k, v, beta, g = (t.detach() for t in delta_inputs(30, decay=True))
    beta[:, 10:20], g[:, 10:20] = 0, 0
    kept = chunked_delta_rule(q, k, v, beta, g, chunk=8)
    skipped = [torch.cat([t[:, :10], t[:, 20:]], dim=1) for t in (q, k, v, beta, g)]
    torch.testing.assert_close(
        torch.cat([kept[:, :10], kept[:, 20:]], dim=1), chunked_delta_rule(*skipped, chunk=8)
    )


def test_the_delta_rule_equals_fla_naive_recurrence():
    """fla's ``delta_rule_recurrence`` takes [B, H, T, D] and does not normalise q and k: both here."""
    naive = pytest.importorskip("fla.ops.delta_rule.naive", reason=FLA)
    q, k, v, beta, _ = inputs = delta_inputs(150, decay=False)
    weights = torch.randn(2, 150, 3, 6, generator=torch.Generator().manual_seed(1))

    def reference(q, k, v, beta, _):
        heads_first = [t.transpose(1, 2) for t in (l2_normalised(q), l2_normalised(k), v, beta)]
        return naive.delta_rule_recurrence(*heads_first)[0].transpose(1, 2)

    ours = outputs_and_gradients(chunked_delta_rule, inputs, weights)
    assert_relative(ours, outputs_and_gradients(reference, inputs, weights), 1e-5)


def test_the_gated_delta_rule_equals_fla_naive_recurrence():
    """fla's ``naive_recurrent_gated_delta_rule`` takes [B, T, H, D], orders (q, k, v, beta, g) and
    returns float32."""
    naive = pytest.importorskip("fla.ops.gated_delta_rule.naive", reason=FLA)
    inputs = delta_inputs(150, decay=True)
    weights = torch.randn(2, 150, 3, 6, generator=torch.Generator().manual_seed(1))

    def reference(q, k, v, beta, g):
        return naive.naive_recurrent_gated_delta_rule(l2_normalised(q), l2_normalised(k), v, beta, g)[0]

    ours = outputs_and_gradients(chunked_delta_rule, inputs, weights)
    assert_relative(ours, outputs_and_gradients(reference, inputs, weights), 1e-5)
