"""Nyström attention (Xiong et al. 2021, Nyströmformer): softmax attention through landmarks.

    out = F̃ Ã⁺ (B̃ V)  (+ depthwise conv of V)
    F̃ = softmax(Q K̃ᵀ), Ã = softmax(Q̃ K̃ᵀ), B̃ = softmax(Q̃ Kᵀ)   (Eq. 15)

with Q, K scaled by d^(-1/4) each and Q̃, K̃ the segment means of Q and K (the landmarks). Neither
(n × m) kernel is formed: B̃ V and F̃ W are each a softmax attention through the fused
``scaled_dot_product_attention`` (``NystromAttention._attend``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from attention_zoo.cores.landmarks import padded_landmarks
from attention_zoo.cores.pinv import iterative_pinv
from attention_zoo.parts.masking import attend_in_float32, check_inputs, key_padding_bias, zero_padding
from attention_zoo.registry import OddPositiveInt, PositiveInt, register_attention


@register_attention("nystrom", approximates="standard", budget_option="num_landmarks", rope=True)
class NystromAttention(nn.Module):
    """Nyström approximation of softmax attention. q, k, v: (B, H, N, D) -> (B, H, N, D).

    Landmarks are the means of ``min(num_landmarks, N)`` contiguous segments of near-equal size
    (segment i covers positions ⌈i·N/m⌉ … ⌈(i+1)·N/m⌉ − 1), taken after padded positions of Q
    and K are zeroed, so a segment that overlaps padding averages zeros there (as in the paper's
    code). Padded keys get a large negative bias in B̃'s softmax, so B̃ V weighs real tokens only.
    There is no exact-softmax shortcut: with N landmarks the result equals softmax attention only
    as far as the iterative pseudo-inverse has converged.

    Options: ``num_landmarks`` (m), ``pinv_iterations`` of the iterative inverse, and
    ``conv_kernel_size`` of the depthwise convolution over the sequence axis of V (one filter per
    head, applied to V with padding zeroed, added to the output); None turns it off.
    Kernels, the inverse and the convolution run in float32 with autocast off; the output has the
    input dtype.

    No ``attention_dropout``: Nyström never forms the (N × N) attention matrix that ``standard``
    drops entries of, only its factors F̃, Ã⁺, B̃, and the authors' ``NystromAttention`` drops none.

    No causal form: every landmark averages a segment, later positions included.

    State size: the m = min(num_landmarks, seq_len) landmark keys K̃ and the m rows of Ã⁺ B̃ V that
    every query reads, 2 · m · dim; the convolution skip's window of V is not counted (short
    convolutions are not, as Zoology counts Mamba's).
    """

    def __init__(
        self,
        *,
        head_dim: int,
        num_heads: int,
        seq_len: int,
        num_landmarks: PositiveInt = 64,
        pinv_iterations: PositiveInt = 6,
        conv_kernel_size: OddPositiveInt | None = 35,
    ) -> None:
        super().__init__()
        self.head_dim = head_dim
        self.num_landmarks = num_landmarks
        self.pinv_iterations = pinv_iterations
        self.conv = (
            None
            if conv_kernel_size is None
            else nn.Conv2d(
                num_heads,
                num_heads,
                kernel_size=(conv_kernel_size, 1),
                padding=(conv_kernel_size // 2, 0),
                groups=num_heads,
                bias=False,
            )
        )

    @staticmethod
    def state_size(*, seq_len: int, dim: int, num_landmarks: int, **_: object) -> int:
        return 2 * min(num_landmarks, seq_len) * dim

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        check_inputs(q, k, v, mask)
        return attend_in_float32(self._attend, q, k, v, mask)

    def _attend(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None
    ) -> torch.Tensor:
        """float32 (B, H, N, D) in and out.

        W = Ã⁺ (B̃ V) is Ã⁺ times one softmax attention of the landmark queries Q̃ over all keys (padded
        keys excluded through the attention mask), and the output F̃ W is a second one, of every query
        over the landmark keys K̃ with values W. Both run through ``scaled_dot_product_attention`` (the
        two d^(-1/4) factors as its scale d^(-1/2)), whose fused kernels never hold the attention
        weights in memory, forward or backward.
        """
        scale = self.head_dim**-0.5  # d^(-1/4) on Q and on K, applied to their products
        count = min(self.num_landmarks, q.shape[-2])
        q, q_landmarks = padded_landmarks(q, mask, count)  # Q̃: (B, H, m, D)
        k, k_landmarks = padded_landmarks(k, mask, count)  # K̃: (B, H, m, D)
        v = zero_padding(v, mask)

        # Ã: (B, H, m, m); B̃ V = softmax(Q̃ Kᵀ + padding bias) V: (B, H, m, D); F̃ W = softmax(Q K̃ᵀ) W
        landmark_kernel = torch.softmax(q_landmarks @ k_landmarks.transpose(-1, -2) * scale, dim=-1)
        key_context = F.scaled_dot_product_attention(
            q_landmarks, k, v, attn_mask=key_padding_bias(mask, q.dtype), scale=scale
        )
        weighted = iterative_pinv(landmark_kernel, self.pinv_iterations) @ key_context  # W: (B, H, m, D)
        out = F.scaled_dot_product_attention(q, k_landmarks, weighted, scale=scale)  # F̃ W: (B, H, N, D)
        if self.conv is not None:
            out = out + self._conv_skip(v)
        return out

    def _conv_skip(self, v: torch.Tensor) -> torch.Tensor:
        """Depthwise convolution of V along the sequence, one filter per head: (B, H, N, D) -> same.

        Computed as a channels-last ``conv2d`` over (B, H·D, N, 1) with each head's filter repeated
        over its D channels: the same function as the ``Conv2d`` (kernel (k, 1), groups=H) that holds
        the weights. The input is laid out as (B, N, H·D) in memory (channels-last; no copy when V
        comes from the wrapper's fused projection), where the CPU's depthwise kernel runs faster than
        on (B, H·D, N).
        """
        batch, heads, length, dim = v.shape
        weight = self.conv.weight.float().repeat_interleave(dim, dim=0)  # (H·D, 1, k, 1)
        # (B, H·D, N, 1) in and out, laid out (B, N, H·D) in memory
        channels = v.transpose(1, 2).reshape(batch, length, 1, heads * dim).permute(0, 3, 1, 2)
        mixed = F.conv2d(channels, weight, padding=(self.conv.padding[0], 0), groups=heads * dim)
        return mixed.permute(0, 2, 3, 1).reshape(batch, length, heads, dim).transpose(1, 2)
