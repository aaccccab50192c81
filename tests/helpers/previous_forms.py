"""nystrom, skyformer and performer as they were computed before they ran through fused attention
calls: each (n × m) kernel formed in memory, the landmarks' padding, means and inverse as separate
autograd operations. References for ``test_attention_fused_forms``; each takes the current core for
its options and weights, so both forms compute with the same landmarks, convolution and features.

All take q, k, v: (B, H, N, D) float32, mask: (B, N) bool or None, and return (B, H, N, D).
"""

from __future__ import annotations

import torch

from attention_zoo.cores.kernelized import gaussian_kernel
from attention_zoo.cores.landmarks import segment_means
from attention_zoo.cores.nystrom import NystromAttention
from attention_zoo.cores.performer import PerformerAttention
from attention_zoo.cores.skyformer import SkyformerAttention, sample_landmark_rows
from attention_zoo.parts.masking import key_padding_bias, real_tokens, zero_padding


def previous_segment_means(x: torch.Tensor, count: int) -> torch.Tensor:
    """``segment_means`` as it was: a ``mean`` (whose backward materialises the broadcast) when
    ``count`` divides the length."""
    n = x.shape[-2]
    return x.unflatten(-2, (count, n // count)).mean(dim=-2) if n % count == 0 else segment_means(x, count)


def previous_iterative_pinv(matrix: torch.Tensor, iterations: int) -> torch.Tensor:
    """``iterative_pinv`` as it was: each step's products and subtractions as separate operations."""
    with torch.autocast(device_type=matrix.device.type, enabled=False):
        a = matrix.float()
        magnitude = a.abs()
        scale = (magnitude.sum(dim=-2).amax(dim=-1) * magnitude.sum(dim=-1).amax(dim=-1)).clamp_min(
            torch.finfo(torch.float32).tiny
        )
        z = a.transpose(-1, -2) / scale[..., None, None]
        eye = torch.eye(a.shape[-2], dtype=a.dtype, device=a.device)
        for _ in range(iterations):
            az = a @ z
            z = 0.25 * z @ (13 * eye - az @ (15 * eye - az @ (7 * eye - az)))
        return z


def previous_nystrom(
    core: NystromAttention, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None
) -> torch.Tensor:
    """F̃ Ã⁺ (B̃ V) (+ conv of V) with F̃ (N × m), Ã (m × m) and B̃ (m × N) each a softmax matrix."""
    scale = core.head_dim**-0.25
    q = zero_padding(q, mask) * scale
    k = zero_padding(k, mask) * scale
    v = zero_padding(v, mask)
    count = min(core.num_landmarks, q.shape[-2])
    q_landmarks, k_landmarks = previous_segment_means(q, count), previous_segment_means(k, count)
    query_kernel = torch.softmax(q @ k_landmarks.transpose(-1, -2), dim=-1)
    landmark_kernel = torch.softmax(q_landmarks @ k_landmarks.transpose(-1, -2), dim=-1)
    key_logits = q_landmarks @ k.transpose(-1, -2)
    bias = key_padding_bias(mask, key_logits.dtype)
    key_kernel = torch.softmax(key_logits if bias is None else key_logits + bias, dim=-1)
    out = query_kernel @ (previous_iterative_pinv(landmark_kernel, core.pinv_iterations) @ (key_kernel @ v))
    return out if core.conv is None else out + core._conv_skip(v)


def previous_skyformer(
    core: SkyformerAttention, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None
) -> torch.Tensor:
    """κ(Q̂, XS) M⁺ κ(XS, K̂) V with both Gaussian kernels (N × m, m × N) formed; landmarks drawn from
    the global RNG as the core draws them (seed it the same to compare)."""
    mask = real_tokens(q, mask)
    scale = core.head_dim**-0.25
    q = zero_padding(q, mask) * scale
    k = zero_padding(k, mask) * scale
    v = zero_padding(v, mask)
    batch, heads, _, dim = q.shape
    index, valid = sample_landmark_rows(mask, core.num_landmarks)
    rows = torch.cat([q, k], dim=-2)
    landmarks = rows.gather(-2, index[:, None, :, None].expand(batch, heads, -1, dim))
    slot = valid[:, None, :].to(q.dtype)
    query_kernel = gaussian_kernel(q, landmarks) * slot[..., None, :]
    key_kernel = gaussian_kernel(landmarks, k) * slot[..., :, None] * mask[:, None, None, :]
    block = gaussian_kernel(landmarks, landmarks) * slot[..., :, None] * slot[..., None, :]
    block = block + core.ridge * torch.eye(block.shape[-1], dtype=block.dtype, device=block.device)
    inv_sqrt_degree = block.sum(dim=-1).rsqrt()
    normalised = inv_sqrt_degree[..., :, None] * block * inv_sqrt_degree[..., None, :]
    inverse = (
        inv_sqrt_degree[..., :, None]
        * previous_iterative_pinv(normalised, core.pinv_iterations)
        * inv_sqrt_degree[..., None, :]
    )
    return query_kernel @ (inverse @ (key_kernel @ v))


def previous_performer(
    core: PerformerAttention, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None
) -> torch.Tensor:
    """φ(Q)(φ(K)ᵀV) / φ(Q)(φ(K)ᵀ1) with scaled copies of q, k and, when ε > 0, φ + ε as new tensors."""

    def exponents(x: torch.Tensor) -> torch.Tensor:
        x = x * core.input_scale
        return x @ core.features.T - x.square().sum(-1, keepdim=True) / 2

    q_exp = exponents(q)
    phi_q = torch.exp(q_exp - q_exp.amax(-1, keepdim=True).detach())
    k_exp = exponents(k)
    if mask is not None:
        k_exp = k_exp.masked_fill(~mask[:, None, :, None], float("-inf"))
    stabiliser = k_exp.amax(dim=(-2, -1), keepdim=True).detach().nan_to_num(neginf=0.0)
    phi_k = torch.exp(k_exp - stabiliser)
    if core.feature_epsilon:
        phi_q = phi_q + core.feature_epsilon
        real = 1.0 if mask is None else mask[:, None, :, None].float()
        phi_k = phi_k + core.feature_epsilon * real
    numerator = phi_q @ (phi_k.transpose(-1, -2) @ v)
    denominator = phi_q @ phi_k.sum(dim=-2).unsqueeze(-1)
    return numerator / denominator.clamp_min(torch.finfo(torch.float32).tiny)


# core name -> the previous form, a function of (core, q, k, v, mask)
PREVIOUS = {"nystrom": previous_nystrom, "skyformer": previous_skyformer, "performer": previous_performer}
