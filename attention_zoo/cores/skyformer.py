"""Skyformer (Chen et al. 2021): kernelized attention through the modified Nyström method.

The Gaussian kernel matrix C = κ(Q̂, K̂) (Q̂ = Q/p^¼, K̂ = K/p^¼) is not PSD, but it is the
off-diagonal block of the PSD matrix B̄ = κ(X, X) with X = [Q̂; K̂] (2n rows). Nyström on B̄ with
a sub-sampling matrix S (Eq. 4–6) gives

    C̃ = κ(Q̂, XS) (SᵀB̄S + γI)⁺ κ(XS, K̂),

where XS are m landmark rows of X sampled uniformly without replacement. Neither (n × m) kernel is
formed: κ(XS, K̂) V and κ(Q̂, XS) (M⁺ κ(XS, K̂) V) are each a Gaussian-kernel attention, computed as
``kernelized`` computes its own (``gaussian_attention``).
"""

from __future__ import annotations

import torch
from torch import nn

from attention_zoo.cores.kernelized import gaussian_attention, gaussian_kernel
from attention_zoo.cores.pinv import iterative_pinv
from attention_zoo.parts.masking import attend_in_float32, check_inputs, real_tokens, zero_padding
from attention_zoo.registry import PositiveFloat, PositiveInt, register_attention


def sample_landmark_rows(mask: torch.Tensor, count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices of landmark rows of [Q; K] for each sequence: mask (B, n) -> index, valid (B, m).

    One uniform key per row of [Q; K] is drawn from torch's global RNG, shared by the batch; each
    sequence takes its real rows with the largest keys, i.e. a uniform sample without replacement
    of m = min(count, 2n) rows that depends only on its own real positions. A sequence with fewer
    than m real rows fills the remaining slots with padded rows, marked False in ``valid``.
    """
    real_rows = torch.cat([mask, mask], dim=1)  # (B, 2n): rows of Q, then rows of K
    keys = torch.rand(real_rows.shape[1], device=mask.device)  # (2n,)
    scores = torch.where(real_rows, keys, torch.full_like(keys, -1.0))
    top, index = scores.topk(min(count, real_rows.shape[1]), dim=-1)
    return index, top >= 0


@register_attention("skyformer", approximates="kernelized", budget_option="num_landmarks", rope=True)
class SkyformerAttention(nn.Module):
    """Modified-Nyström approximation of ``kernelized``. q, k, v: (B, H, N, D) -> (B, H, N, D).

    Landmarks are ``num_landmarks`` rows drawn afresh in every forward (training and eval) from
    the real rows of [Q̂; K̂], the same rows for every head of a sequence. Slots a short sequence
    cannot fill get zero kernel rows and columns, so they add nothing; a fully padded sequence
    gives zeros. Padded keys get kernel weight zero. ``ridge`` is γ, the value (0.1) of the
    authors' released code. Kernels and the inverse run in float32 with autocast off; the output
    has the input dtype.

    As in §4.4 the landmark block M = SᵀB̄S + γI is normalised by D_M = diag(M 1) before the
    iterative pseudo-inverse, and M⁺ ≈ D_M^(-½) (D_M^(-½) M D_M^(-½))⁺ D_M^(-½), which helps the
    iteration converge.

    No ``attention_dropout``: the kernel matrix that ``kernelized`` drops entries of exists here
    only as its Nyström factors (N × m, m × m, m × N), and the authors' ``Skyformer`` drops none.

    No causal form: the landmarks are sampled from the rows of every position.

    State size: the m = min(num_landmarks, 2 · seq_len) landmark rows XS and the m rows of
    M⁺ κ(XS, K̂) V that every query reads, 2 · m · dim.
    """

    def __init__(
        self,
        *,
        head_dim: int,
        num_heads: int,
        seq_len: int,
        num_landmarks: PositiveInt = 128,
        pinv_iterations: PositiveInt = 6,
        ridge: PositiveFloat = 0.1,
    ) -> None:
        super().__init__()
        self.head_dim = head_dim
        self.num_landmarks = num_landmarks
        self.pinv_iterations = pinv_iterations
        self.ridge = ridge

    @staticmethod
    def state_size(*, seq_len: int, dim: int, num_landmarks: int, **_: object) -> int:
        return 2 * min(num_landmarks, 2 * seq_len) * dim

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        check_inputs(q, k, v, mask)
        mask = real_tokens(q, mask)
        return attend_in_float32(self._attend, q, k, v, mask)

    def _attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """float32 (B, H, N, D) in and out; mask (B, N) bool."""
        scale = self.head_dim**-0.25
        q = zero_padding(q, mask) * scale  # Q̂: (B, H, N, D)
        k = zero_padding(k, mask) * scale  # K̂: (B, H, N, D)
        v = zero_padding(v, mask)
        batch, heads, _, dim = q.shape

        index, valid = sample_landmark_rows(mask, self.num_landmarks)  # (B, m)
        rows = torch.cat([q, k], dim=-2)  # X: (B, H, 2N, D)
        landmarks = rows.gather(-2, index[:, None, :, None].expand(batch, heads, -1, dim))  # XS: (B, H, m, D)
        slot = valid[:, None, :].to(q.dtype)  # (B, 1, m)

        # SᵀB̄S + γI: (B, H, m, m), slots a short sequence cannot fill zeroed
        block = gaussian_kernel(landmarks, landmarks) * slot[..., :, None] * slot[..., None, :]
        block = block + self.ridge * torch.eye(block.shape[-1], dtype=block.dtype, device=block.device)
        inv_sqrt_degree = block.sum(dim=-1).rsqrt()  # D_M^(-½) diagonal: (B, H, m)
        normalised = inv_sqrt_degree[..., :, None] * block * inv_sqrt_degree[..., None, :]
        inverse = (  # M⁺: (B, H, m, m)
            inv_sqrt_degree[..., :, None]
            * iterative_pinv(normalised, self.pinv_iterations)
            * inv_sqrt_degree[..., None, :]
        )
        key_context = gaussian_attention(landmarks, k, v, mask) * slot[..., None]  # κ(XS, K̂) V: (B, H, m, D)
        return gaussian_attention(q, landmarks, inverse @ key_context, valid)  # κ(Q̂, XS) M⁺ κ(XS, K̂) V
