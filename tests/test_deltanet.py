"""DeltaNet and Gated DeltaNet (``attention_zoo.mixers.deltanet``, ``gated_deltanet``) against fla's
naive references (issue 54): the core after the projections on a padded batch, each sequence's real
positions against the reference on that sequence alone, causal and both ways, outputs and gradients to
1e-5 relative in float32; the whole layer against fla's layer re-stated here; fla's initialisation of
the decay; and, on a GPU, fla's chunk kernels (``kernel=fla``) against the PyTorch form."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from helpers.fla_gpu import needs_fla_on_this_gpu

import attention_zoo
from attention_zoo.parts.delta_chunks import delta_rule, l2_normalised

FLA = 'flash-linear-attention is not installed: pip install -e ".[fla]"'
DIM, HEADS, LENGTHS = 12, 2, [70, 41, 1]  # a padded batch over two chunks of 64: full, padded, one token


def build(name: str, **options) -> torch.nn.Module:
    torch.manual_seed(0)
    return attention_zoo.build_attention(name, dim=DIM, seq_len=max(LENGTHS), heads=HEADS, **options)


def core_inputs(name: str, seed: int = 0) -> list[torch.Tensor]:
    """q, k (B, L, H, 6), v (B, L, H, V), the β logits and (gated) the decay logits (B, L, H), leaves."""
    generator = torch.Generator().manual_seed(seed)
    batch, length, value = len(LENGTHS), max(LENGTHS), 6 if name == "deltanet" else 12
    shapes = [(batch, length, HEADS, 6)] * 2 + [(batch, length, HEADS, value)] + [(batch, length, HEADS)]
    shapes += [(batch, length, HEADS)] if name == "gated_deltanet" else []
    return [torch.randn(*shape, generator=generator).requires_grad_() for shape in shapes]


def ours(mixer: torch.nn.Module, inputs: list[torch.Tensor], mask: torch.Tensor) -> torch.Tensor:
    q, k, v, b, *a = inputs
    return mixer.core(q, k, v, b, [mixer.log_decay(a[0])] if a else [], mask)


def fla_recurrence(name: str, q, k, v, beta, g=None) -> torch.Tensor:
    """fla's naive recurrence on one unpadded sequence, q and k normalised here (the references do
    not): ``delta_rule_recurrence`` in [B, H, T, D]; the gated one in [B, T, H, D], (q, k, v, beta, g)."""
    q, k = l2_normalised(q), l2_normalised(k)
    if name == "deltanet":
        naive = pytest.importorskip("fla.ops.delta_rule.naive", reason=FLA)
        heads_first = [t.transpose(1, 2) for t in (q, k, v, beta)]
        return naive.delta_rule_recurrence(*heads_first)[0].transpose(1, 2)
    naive = pytest.importorskip("fla.ops.gated_delta_rule.naive", reason=FLA)
    return naive.naive_recurrent_gated_delta_rule(q, k, v, beta, g)[0]


def fla_gate(mixer: torch.nn.Module, a: torch.Tensor) -> torch.Tensor:
    """fla's ``naive_gdn_gate``: −exp(A_log) · softplus(a + dt_bias)."""
    gate = pytest.importorskip("fla.ops.gated_delta_rule.gate", reason=FLA)
    return gate.naive_gdn_gate(a, mixer.A_log, mixer.dt_bias)


def fla_reference(name: str, mixer: torch.nn.Module, inputs: list[torch.Tensor]) -> torch.Tensor:
    """The core's reference: β = sigmoid(b) and (gated) fla's gate of the decay logits."""
    q, k, v, b, *a = inputs
    return fla_recurrence(name, q, k, v, torch.sigmoid(b), *(fla_gate(mixer, a[0]) for _ in a))


def assert_relative(a: torch.Tensor, b: torch.Tensor, tolerance: float, label: str) -> None:
    """Within ``tolerance`` relative to b's largest entry (a gradient that is exactly zero: zero)."""
    error, scale = (a - b).abs().max(), b.abs().max()
    assert error <= tolerance * scale, f"{label}: error {error:.2e} at scale {scale:.2e}"


@pytest.mark.parametrize("bidirectional", [False, True], ids=["causal", "both-ways"])
@pytest.mark.parametrize("name", ["deltanet", "gated_deltanet"])
def test_the_core_on_a_padded_batch_is_fla_naive_reference_on_each_sequence(name, bidirectional):
    """Both ways: the mean of the reference and of the reference over the sequence reversed within its
    own length. Gradients of every input (zero at padding) and of the decay's parameters."""
    mixer = build(name, bidirectional=bidirectional)
    inputs = core_inputs(name)
    parameters = [mixer.A_log, mixer.dt_bias] if name == "gated_deltanet" else []
    mask = torch.arange(max(LENGTHS))[None, :] < torch.tensor(LENGTHS)[:, None]
    weights = (
        torch.randn(*inputs[2].shape, generator=torch.Generator().manual_seed(1)) * mask[..., None, None]
    )
    out = ours(mixer, inputs, mask)
    grads = torch.autograd.grad((out * weights).sum(), [*inputs, *parameters])
    expected_parameter_grads = [torch.zeros_like(p) for p in parameters]
    for i, length in enumerate(LENGTHS):
        alone = [t[i : i + 1, :length].detach().requires_grad_() for t in inputs]
        reference = fla_reference(name, mixer, alone)
        if bidirectional:
            reference = (reference + fla_reference(name, mixer, [t.flip(1) for t in alone]).flip(1)) / 2
        assert_relative(out[i : i + 1, :length], reference, 1e-5, f"sequence {i}: output")
        expected = torch.autograd.grad((reference * weights[i : i + 1, :length]).sum(), [*alone, *parameters])
        for index, (mine, theirs) in enumerate(
            zip(grads[: len(inputs)], expected[: len(inputs)], strict=True)
        ):
            assert_relative(
                mine[i : i + 1, :length], theirs, 1e-5, f"sequence {i}: gradient of input {index}"
            )
            assert (mine[i, length:] == 0).all(), f"sequence {i}: a gradient reaches padding"
        expected_parameter_grads = [
            a + b for a, b in zip(expected_parameter_grads, expected[len(inputs) :], strict=True)
        ]
    for index, (mine, theirs) in enumerate(zip(grads[len(inputs) :], expected_parameter_grads, strict=True)):
        assert_relative(mine, theirs, 1e-5, f"gradient of {('A_log', 'dt_bias')[index]}")


def fla_layer(name: str, mixer: torch.nn.Module, x: torch.Tensor, neg: bool) -> torch.Tensor:
    """fla's ``DeltaNet.forward`` (``fla/layers/delta_net.py:195-287``) or ``GatedDeltaNet.forward``
    (``fla/layers/gated_deltanet.py:269-355``) on one unpadded sequence, without cache, with the
    mixer's weights: fla's ``ShortConvolution`` (causal, SiLU), β = sigmoid (doubled with
    ``allow_neg_eigval``: ``neg``), ``RMSNorm`` or ``FusedRMSNormGated`` (swish) per head."""

    def short_conv(conv, u):  # (1, L, C) -> (1, L, C)
        padded = F.pad(u.transpose(1, 2), (conv.weight.shape[-1] - 1, 0))
        return F.silu(F.conv1d(padded, conv.weight, conv.bias, groups=u.shape[-1])).transpose(1, 2)

    heads = lambda t: t.unflatten(-1, (HEADS, -1))  # noqa: E731
    q, k, v = (
        heads(short_conv(c, p(x)))
        for c, p in zip(
            (mixer.q_conv1d, mixer.k_conv1d, mixer.v_conv1d),
            (mixer.q_proj, mixer.k_proj, mixer.v_proj),
            strict=True,
        )
    )
    beta = torch.sigmoid(mixer.b_proj(x)) * (2 if neg else 1)
    g = [fla_gate(mixer, mixer.a_proj(x))] if name == "gated_deltanet" else []
    o = fla_recurrence(name, q, k, v, beta, *g)
    norm = mixer.o_norm if mixer.g_proj is None else mixer.o_norm.norm
    o = F.rms_norm(o, (o.shape[-1],), norm.weight, norm.eps)
    if mixer.g_proj is not None:
        o = o * F.silu(heads(mixer.g_proj(x)))
    return mixer.o_proj(o.flatten(-2))


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("deltanet", {}),
        ("deltanet", {"use_gate": True, "allow_neg_eigval": True, "conv_bias": True, "conv_size": 2}),
        ("gated_deltanet", {}),
        ("gated_deltanet", {"use_gate": False, "allow_neg_eigval": True, "expand_v": 1.0, "key_dim": 8}),
    ],
    ids=["deltanet", "deltanet-options", "gated_deltanet", "gated_deltanet-options"],
)
def test_the_causal_layer_is_fla_layer(name, options):
    mixer = build(name, bidirectional=False, **options)
    with torch.no_grad():  # a norm weight other than ones
        mixer.o_norm.get_parameter("weight" if mixer.g_proj is None else "norm.weight").uniform_(0.5, 1.5)
    x = torch.randn(1, 70, DIM, generator=torch.Generator().manual_seed(2))
    expected = fla_layer(name, mixer, x, options.get("allow_neg_eigval", False))
    assert_relative(mixer(x), expected, 1e-5, "output")


def test_the_decay_starts_as_fla_layer_draws_it():
    """A uniform in [0, 16], softplus(dt_bias) log-uniform in [0.001, 0.1]; no weight decay on either."""
    torch.manual_seed(0)
    mixer = attention_zoo.build_attention("gated_deltanet", dim=2000, seq_len=8, heads=4000, key_dim=4000)
    A, dt = mixer.A_log.exp(), F.softplus(mixer.dt_bias)
    assert 0 <= A.min() < 0.1 and 15.9 < A.max() <= 16 and abs(A.mean() - 8) < 0.3
    assert 0.001 <= dt.min() < 0.0011 and 0.099 < dt.max() <= 0.1 + 1e-6
    assert abs(dt.log().mean() - (torch.tensor(0.001).log() + torch.tensor(0.1).log()) / 2) < 0.1
    assert mixer.A_log._optim == mixer.dt_bias._optim == {"weight_decay": 0.0}


@pytest.mark.cuda
@needs_fla_on_this_gpu
@pytest.mark.parametrize("length", [40, 300])  # fla's layers switch kernels at 64 tokens; the core never does
@pytest.mark.parametrize(
    ("decay", "dtype", "tolerance"),
    [(False, torch.bfloat16, 3e-2), (False, torch.float32, 3e-3), (True, torch.float32, 3e-3)],
    ids=["delta-bf16", "delta-float32", "gated-float32"],
)
def test_fla_chunk_kernel_is_the_torch_form(decay, dtype, tolerance, length):
    """``chunk_delta_rule`` (half precision), ``chunk_gated_delta_rule`` (float32, with a zero decay
    for the plain rule or the decay): outputs and gradients against ``chunked_delta_rule``."""
    pytest.importorskip("fla.ops", reason=FLA)
    generator = torch.Generator(device="cuda").manual_seed(0)
    shapes = [(2, length, 3, 32)] * 3 + [(2, length, 3)]
    q, k, v, b = (torch.randn(*shape, device="cuda", generator=generator) for shape in shapes)
    inputs = [q.to(dtype), k.to(dtype), v.to(dtype), torch.sigmoid(b)]
    inputs.append(-torch.rand(2, length, 3, device="cuda", generator=generator) if decay else None)
    leaves = [t.requires_grad_() for t in inputs if t is not None]
    weights = torch.randn(2, length, 3, 32, device="cuda", generator=generator)
    results = []
    for kernel in ("fla", "torch"):
        out = delta_rule(*inputs, name="deltanet", kernel=kernel)
        results.append([out.float(), *torch.autograd.grad((out.float() * weights).sum(), leaves)])
    for index, (theirs, mine) in enumerate(zip(*results, strict=True)):
        assert_relative(theirs.float(), mine.float(), tolerance, f"tensor {index}")


@pytest.mark.cuda
@needs_fla_on_this_gpu
@pytest.mark.parametrize("name", ["deltanet", "gated_deltanet"])
def test_the_mixer_on_fla_kernel_is_the_mixer_on_the_torch_form(name):
    """A padded batch both ways in float32: ``kernel=fla`` and ``kernel=torch`` with the same weights."""
    pytest.importorskip("fla.ops", reason=FLA)
    mixers = [build(name, kernel=kernel).cuda() for kernel in ("fla", "torch")]
    x = torch.randn(len(LENGTHS), max(LENGTHS), DIM, device="cuda")
    mask = torch.arange(max(LENGTHS), device="cuda")[None, :] < torch.tensor(LENGTHS, device="cuda")[:, None]
    theirs, mine = (mixer(x, mask) * mask[..., None] for mixer in mixers)
    assert_relative(theirs, mine, 3e-3, "output")


@pytest.mark.parametrize("name", ["deltanet", "gated_deltanet"])
def test_kernel_fla_without_a_gpu_is_refused_in_one_line(name, monkeypatch):
    pytest.importorskip("fla.ops", reason=FLA)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match=rf"^attention '{name}': kernel=fla needs a CUDA GPU and none is"):
        build(name, kernel="fla")
