"""Performer attention (Choromanski et al. 2021): FAVOR+ positive orthogonal random features.

The softmax kernel exp(qᵀk/√d) = E_w[φ(x)ᵀφ(y)] with x = q·d^(-1/4), y = k·d^(-1/4) and

    φ(x) = exp(Wx − ‖x‖²/2) / √m,   W: (m, d) random features,

so attention becomes linear in the length: out = φ(Q)(φ(K)ᵀV) / (φ(Q)(φ(K)ᵀ1)). The features are
shared by all heads and held in a buffer; ``redraw_features()`` draws new ones.

Causal (unidirectional FAVOR+ by prefix sums, Choromanski et al. 2021; Katharopoulos et al. 2020): the
sums over keys become prefix sums, out_i = φ(q_i)ᵀ Σ_{j<=i} φ(k_j)v_jᵀ / φ(q_i)ᵀ Σ_{j<=i} φ(k_j),
computed by chunks (``causal_ratio``).
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from attention_zoo.parts.causality import require_for_causal
from attention_zoo.parts.masking import check_inputs
from attention_zoo.registry import NonNegativeFloat, PositiveInt, register_attention

CAUSAL_CHUNK = 64  # positions per chunk of the causal prefix sums (memory and speed, not results)


def orthogonal_gaussian_features(
    num_features: int, dim: int, device: torch.device | None = None
) -> torch.Tensor:
    """Random features (num_features, dim): orthonormal blocks of ``dim`` rows with chi-distributed norms.

    Each block is ``dim`` orthogonal Gaussian directions (QR of a Gaussian block), each row rescaled by
    a norm drawn from the chi distribution with ``dim`` degrees of freedom, so that every row is
    marginally Gaussian while the rows of a block stay orthogonal. Drawn from torch's global RNG.
    """
    blocks = []
    for start in range(0, num_features, dim):
        gaussian = torch.randn(dim, dim, device=device)
        orthonormal, _ = torch.linalg.qr(gaussian)  # columns orthonormal; so are the rows of its transpose
        blocks.append(orthonormal.T[: num_features - start])
    directions = torch.cat(blocks)
    norms = torch.randn(num_features, dim, device=device).norm(dim=1, keepdim=True)  # chi(dim) samples
    return directions * norms


@register_attention("performer", approximates="standard", budget_option="num_features", causal=True)
class PerformerAttention(nn.Module):
    """FAVOR+ softmax attention. q, k, v: (B, H, N, D) -> (B, H, N, D); float32 inside.

    Buffer ``features``: (num_features, head_dim), shared across heads. ``temperature``: "sqrt_d"
    approximates softmax(QKᵀ/√d) (x = q·d^(-1/4)), "d" approximates softmax(QKᵀ/d) (x = q·d^(-1/2));
    ``feature_epsilon``: ε added to every feature of a real position.

    Every exponent has a stabiliser subtracted before ``exp``: a per-row maximum for queries and,
    for keys, one maximum per (sequence, head) over that sequence's real keys only, so padding and
    the other sequences of the batch cannot change a sequence's result. Both cancel in the ratio, and
    so does the 1/√m, which is therefore not applied.

    Options that reproduce the authors' code (``performer_pytorch.FastAttention`` behind the
    Nyströmformer and Skyformer LRA wrappers): ``temperature="d"`` — the wrappers divide q and k by
    d^¼ and the feature map divides them again by d^¼, so what they approximate is softmax(QKᵀ/d),
    not softmax(QKᵀ/√d) — and ``feature_epsilon=1e-4``, the constant they add to every feature after
    the stabilised exponential (φ = (exp(· − stabiliser) + ε)/√m; with ε > 0 the stabilisers do not
    cancel exactly, as in their code). Their key stabiliser is one maximum over the whole batch and
    their padded keys keep φ = ε; here both stay per sequence and padded keys stay at φ = 0.

    Backward keeps φ(Q) and φ(K) (B, H, N, m) and no other (N × m) tensor: the exponents are computed
    in place (the scale folded into W), and ε is not added to the features themselves but to the small
    factors, by (φ + ε)ᵀ[V, 1] = φᵀ[V, 1] + ε Σ_real [V, 1] and (φ_q + ε)·c = φ_q·c + ε Σ c — the
    same sums.

    No ``attention_dropout``: FAVOR+ never forms an attention matrix, only the features φ(Q), φ(K)
    (nor does the authors' ``FastAttention`` drop anything).

    ``causal=True`` needs ``feature_epsilon=0``: ε is the non-causal LRA wrappers' constant, added
    after their one stabiliser per batch, which the causal form replaces by one per position.

    State size: the m × D matrix φ(K)ᵀV and the m-vector φ(K)ᵀ1 of each head, num_features ·
    (dim + num_heads): the recurrent state of the causal form (Zoology counts linear attention's
    the same way, ``zoology/mixers/based.py``).
    No rotary positions (``attention_zoo.parts.rotary``): FAVOR+ never forms q·k. Its features φ(q), φ(k)
    depend on each vector's orientation against the drawn ω, not only on dot products between q and
    k. Shifting every position turns all of q and k by one common rotation, which leaves every q·k as
    it is but, for given features, changes the output: the relative-position property holds only in
    expectation over the features. (RoFormer §3.3 rotates φ(q) and φ(k) instead, a different method.)
    """

    def __init__(
        self,
        *,
        head_dim: int,
        num_heads: int,
        seq_len: int,
        num_features: PositiveInt = 256,
        temperature: Literal["sqrt_d", "d"] = "sqrt_d",
        feature_epsilon: NonNegativeFloat = 0.0,
        causal: bool = False,
    ) -> None:
        super().__init__()
        require_for_causal("performer", causal, "feature_epsilon", feature_epsilon, 0.0)
        self.causal = causal
        self.head_dim = head_dim
        self.num_features = num_features
        self.input_scale = head_dim ** (-0.25 if temperature == "sqrt_d" else -0.5)
        self.feature_epsilon = feature_epsilon
        self.register_buffer("features", orthogonal_gaussian_features(num_features, head_dim))

    @staticmethod
    def state_size(
        *, num_features: int, dim: int, num_heads: int, causal: bool, feature_epsilon: float, **_: object
    ) -> int:
        require_for_causal("performer", causal, "feature_epsilon", feature_epsilon, 0.0)
        return num_features * (dim + num_heads)

    @torch.no_grad()
    def redraw_features(self) -> None:
        """Replace the random features by a fresh draw from torch's global RNG."""
        fresh = orthogonal_gaussian_features(self.num_features, self.head_dim, self.features.device)
        self.features.copy_(fresh)

    def _exponents(self, x: torch.Tensor) -> torch.Tensor:
        """Wx − ‖x‖²/2 for x = input·``input_scale``: (B, H, N, D) -> (B, H, N, m), float32.

        The scale goes into W and the squared norm, so autograd keeps the input itself, not a
        scaled copy; the result is a fresh tensor that backward does not keep (safe to edit in place).
        """
        x = x.float()
        scaled_features = self.features.float() * self.input_scale
        half_sq_norm = x.square().sum(-1, keepdim=True) * (self.input_scale**2 / 2)
        return (x @ scaled_features.T).sub_(half_sq_norm)

    @staticmethod
    def _real_totals(v: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """[Σ V, count] over the real keys: (B, H, N, D) -> (B, H, 1, D + 1), float32."""
        real = v.new_ones(v.shape[0], 1, 1, v.shape[2], dtype=torch.float32)  # (B, 1, 1, N)
        if mask is not None:
            real = real * mask[:, None, None, :]
        count = real.sum(dim=-1, keepdim=True).expand(-1, v.shape[1], -1, -1)  # (B, H, 1, 1)
        return torch.cat([real @ v.float(), count], dim=-1)

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        check_inputs(q, k, v, mask)
        with torch.autocast(device_type=q.device.type, enabled=False):
            q_exp = self._exponents(q)
            phi_q = q_exp.sub_(q_exp.detach().amax(-1, keepdim=True)).exp_()  # (B, H, N, m)

            k_exp = self._exponents(k)  # (B, H, N, m)
            if mask is not None:
                k_exp.masked_fill_(~mask[:, None, :, None], float("-inf"))
            if self.causal:
                return causal_ratio(phi_q, k_exp, v.float()).to(q.dtype)
            stabiliser = k_exp.detach().amax(dim=(-2, -1), keepdim=True)  # (B, H, 1, 1), real keys only
            stabiliser = stabiliser.nan_to_num(neginf=0.0)  # a fully padded sequence has no real key
            phi_k = k_exp.sub_(stabiliser).exp_()  # (B, H, N, m), exactly 0 at padded keys

            # [φ(K)ᵀV | φ(K)ᵀ1]: (B, H, m, D + 1); φ(Q) times it is [numerator | denominator]
            context = torch.cat([phi_k.transpose(-1, -2) @ v.float(), phi_k.sum(dim=-2)[..., None]], dim=-1)
            if self.feature_epsilon:  # ε on every feature of a real key and of every query, added to
                context = context + self.feature_epsilon * self._real_totals(v, mask)  # the small factors
            ratio = phi_q @ context  # (B, H, N, D + 1)
            if self.feature_epsilon:
                ratio = ratio + self.feature_epsilon * context.sum(dim=-2, keepdim=True)
            numerator, denominator = ratio[..., :-1], ratio[..., -1:]  # (B, H, N, D), (B, H, N, 1)
            out = numerator / denominator.clamp_min(torch.finfo(torch.float32).tiny)
        return out.to(q.dtype)


def causal_ratio(phi_q: torch.Tensor, k_exp: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """out_i = Σ_{j<=i} (φ_q,i · φ_k,j) v_j / Σ_{j<=i} φ_q,i · φ_k,j, float32.

    phi_q: (B, H, N, m) query features; k_exp: (B, H, N, m) key exponents, −inf at padded keys;
    v: (B, H, N, D) -> (B, H, N, D).

    Each key's features are stabilised by M_j, the largest exponent of the keys up to j (a running
    maximum, so it depends on no later key), and every sum for query i is taken in units of
    exp(−M_i), which cancel in the ratio: key j enters with exp(k_exp,j − M_j) · exp(M_j − M_i), both
    factors at most 1. Within a chunk of ``CAUSAL_CHUNK`` positions this is a masked (c × c)
    product; across chunks the state Σ φ_k vᵀ of the chunks before is carried as a sum over chunks
    with the same decays: memory O(N·c + (N/c)·m·D), never an (N × m × D) tensor of prefix states.
    """
    batch, heads, length, features = k_exp.shape
    chunk = min(CAUSAL_CHUNK, length)
    chunks = -(-length // chunk)
    pad = chunks * chunk - length
    with torch.no_grad():  # the stabilisers cancel: no gradient through them
        running = k_exp.amax(-1).cummax(-1).values.nan_to_num(neginf=0.0)  # M: (B, H, N)
        running = F.pad(running, (0, pad), value=0.0).view(batch, heads, chunks, chunk)  # (B, H, C, c)
        ends = running[..., -1]  # M at each chunk's last position: (B, H, C)
        before = torch.cat([ends[..., :1], ends[..., :-1]], dim=-1)  # the previous chunk's: (B, H, C)
        within = torch.ones(chunk, chunk, dtype=torch.bool, device=k_exp.device).tril()  # j <= i
        decay = (running[..., None, :] - running[..., :, None]).clamp_max(0).exp() * within  # (B, H, C, c, c)
        to_end = (running - ends[..., None]).clamp_max(0).exp()  # exp(M_j − M_end): (B, H, C, c)
        earlier = torch.ones(chunks, chunks, dtype=torch.bool, device=k_exp.device).tril(-1)  # c' < c
        carry = (ends[..., None, :] - before[..., :, None]).clamp_max(0).exp() * earlier  # (B, H, C, C)
        from_before = (before[..., None] - running).clamp_max(0).exp()[..., None]  # (B, H, C, c, 1)

    def chunked(x: torch.Tensor) -> torch.Tensor:  # (B, H, N, F) -> (B, H, C, c, F), zero after N
        return F.pad(x, (0, 0, 0, pad)).view(batch, heads, chunks, chunk, -1)

    psi = chunked((k_exp - running.flatten(2)[..., :length, None]).exp())  # (B, H, C, c, m), ≤ 1
    queries = chunked(phi_q)  # (B, H, C, c, m)
    values = chunked(torch.cat([v, torch.ones_like(v[..., :1])], dim=-1))  # [V | 1]: (B, H, C, c, D + 1)
    ratio = (queries @ psi.transpose(-1, -2) * decay) @ values  # within the chunk: (B, H, C, c, D + 1)
    totals = (psi * to_end[..., None]).transpose(-1, -2) @ values  # each chunk's sum: (B, H, C, m, D + 1)
    state = torch.einsum("bhcC,bhCmf->bhcmf", carry, totals)  # the chunks before: (B, H, C, m, D + 1)
    ratio = ratio + (queries @ state) * from_before  # (B, H, C, c, D + 1)
    ratio = ratio.view(batch, heads, chunks * chunk, -1)[:, :, :length]
    numerator, denominator = ratio[..., :-1], ratio[..., -1:]  # (B, H, N, D), (B, H, N, 1)
    return numerator / denominator.clamp_min(torch.finfo(torch.float32).tiny)
