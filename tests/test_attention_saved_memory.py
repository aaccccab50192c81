"""``saved_tensor_bytes``: what the graph of an output keeps for backward, each storage once, inputs and
small tensors left out on request, a dropped branch not counted."""

from __future__ import annotations

import torch

from attention_zoo.saved_memory import saved_tensor_bytes

N = 1000  # elements of each float32 tensor: 4,000 bytes


def test_a_product_keeps_both_factors():
    a, b = torch.randn(N, requires_grad=True), torch.randn(N, requires_grad=True)
    assert saved_tensor_bytes(lambda: a * b) == 2 * 4 * N  # d(ab)/da = b, d(ab)/db = a
    assert saved_tensor_bytes(lambda: a * b, exclude=[a]) == 4 * N
    assert saved_tensor_bytes(lambda: a * b, exclude=[a, b]) == 0


def test_a_storage_saved_twice_or_through_views_counts_once():
    a = torch.randn(2 * N, requires_grad=True)
    assert saved_tensor_bytes(lambda: (a * a).exp()) == 2 * 4 * 2 * N  # a once (saved twice), exp's result
    assert saved_tensor_bytes(lambda: a[:N] * a[N:], exclude=[]) == 4 * 2 * N  # two views of one storage


def test_a_custom_functions_saved_tensors_count():
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    x = torch.randn(N, requires_grad=True)
    assert saved_tensor_bytes(lambda: Square.apply(x)) == 4 * N


def test_a_dropped_branch_and_small_tensors_are_not_counted():
    x = torch.randn(4, N, requires_grad=True)

    def scaled(detach: bool) -> torch.Tensor:
        peak = x.exp().amax(dim=-1, keepdim=True)  # (4, 1); its branch keeps exp(x), (4, N)
        return x.sin() * (peak.detach() if detach else peak)  # sin keeps x; the product keeps peak

    assert saved_tensor_bytes(lambda: scaled(detach=True), exclude=[x]) == 4 * 4  # peak alone
    assert saved_tensor_bytes(lambda: scaled(detach=True), exclude=[x], at_least=5) == 0
    assert saved_tensor_bytes(lambda: scaled(detach=False), exclude=[x]) > 4 * 4 * N  # exp(x) with it
