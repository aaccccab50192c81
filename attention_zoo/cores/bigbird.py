"""BigBird block-sparse attention (Zaheer et al. 2020), the ITC variant: softmax(QKᵀ/√d)V where each
query attends to a sparse set of keys given block by block.

The sequence is cut into blocks of ``block_size`` tokens (N padded up to a multiple of it; those
positions count as padding). With nb blocks numbered 0 … nb − 1:

- the global blocks 0 and nb − 1 attend to every key, and every query block attends to them;
- every other query block i attends to its window, blocks i − 1, i, i + 1, and to
  ``num_random_blocks`` (r) random blocks per head, distinct and outside its window and the global
  blocks. Keys are gathered as whole blocks: memory O(N · block_size · (5 + r)), no (N × N) matrix.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from attention_zoo.parts.masking import check_inputs, key_padding_bias, real_tokens
from attention_zoo.registry import PositiveInt, register_attention
from attention_zoo.state_sizes import every_key_and_value

WINDOW_AND_GLOBAL_SLOTS = 5  # blocks 0, i − 1, i, i + 1, nb − 1


@register_attention("bigbird", approximates="standard", rope=True)
class BigBirdAttention(nn.Module):
    """Block-sparse softmax attention. q, k, v: (B, H, N, D) -> (B, H, N, D); float32 inside.

    A sequence of fewer than ``num_random_blocks + 5`` blocks (fewer than 512 tokens with the
    defaults) has too few blocks to draw the random ones outside the window and the global blocks:
    there every query attends to every key, i.e. this is exact softmax attention. Padded keys never
    receive attention.

    Random blocks. The paper's code (google-research/bigbird, ``bigbird_block_rand_mask*``, seeded per
    layer) and the HuggingFace port (``np.random.seed(layer index)`` on every call) keep one pattern
    per layer and head for all of training: so does this core by default, drawn from a
    ``torch.Generator`` seeded with the core's ``pattern_seed`` (drawn from torch's global RNG when the
    core is built, and saved in the state dict as extra state: a plain int, so no forward waits on a
    GPU to read it). ``redraw_random_blocks=true`` draws new ones in every training forward from
    torch's global RNG, as the Skyformer authors' port does (``np.random.seed(None)`` on every call;
    there in evaluation too, here evaluation keeps the fixed pattern). Random blocks are drawn
    uniformly among all allowed blocks; the paper's code and its ports draw them from the first blocks
    of long sequences only (the first 1024 tokens at 3072 and 4096, through a "plan" the first
    2r + 5 blocks at other lengths).

    No ``attention_dropout``: the Skyformer authors' port drops nothing of the attention weights.

    No causal form: the global blocks (the first and the last) attend to every key and are attended by
    every query, and BigBird's encoder–decoder keeps full attention in its decoder (BigBird-Pegasus:
    sparse encoder, decoder attention ``original_full``).

    State size: every position's key and value, 2 · seq_len · dim: the global blocks read them all.
    """

    def __init__(
        self,
        *,
        head_dim: int,
        num_heads: int,
        seq_len: int,
        block_size: PositiveInt = 64,
        num_random_blocks: PositiveInt = 3,
        redraw_random_blocks: bool = False,
    ) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.block_size = block_size
        self.num_random_blocks = num_random_blocks
        self.redraw_random_blocks = redraw_random_blocks
        self.pattern_seed = int(torch.randint(2**62, ()))  # saved with the model (extra state)
        self._fixed_blocks: dict[tuple[int, torch.device], torch.Tensor] = {}  # (nb, device) -> blocks

    def get_extra_state(self) -> dict[str, int]:
        return {"pattern_seed": self.pattern_seed}

    def set_extra_state(self, state: dict[str, int]) -> None:
        self.pattern_seed = state["pattern_seed"]
        self._fixed_blocks.clear()

    def min_blocks(self) -> int:
        """The fewest blocks for which the sparse pattern exists; below it the core is exact."""
        return self.num_random_blocks + WINDOW_AND_GLOBAL_SLOTS

    def random_blocks(self, num_blocks: int, device: torch.device | None = None) -> torch.Tensor:
        """Random key blocks (H, nb − 2, r) of the query blocks 1 … nb − 2, int64.

        Row i − 1 holds r distinct blocks drawn uniformly from {1, …, nb − 2} less {i − 1, i, i + 1}.
        From the fixed per-core generator (drawn once per length and device, then kept, so that a
        forward never copies it to the device again), or from the global RNG of ``device`` in
        training when ``redraw_random_blocks`` is set. Needs nb >= ``min_blocks()``.
        """
        shape = (self.num_heads, num_blocks - 2, num_blocks)
        if self.training and self.redraw_random_blocks:
            return self._pick_allowed(torch.rand(shape, device=device))
        key = (num_blocks, torch.device("cpu") if device is None else torch.device(device))
        if key not in self._fixed_blocks:
            draws = torch.rand(shape, generator=torch.Generator().manual_seed(self.pattern_seed))
            self._fixed_blocks[key] = self._pick_allowed(draws).to(key[1])
        return self._fixed_blocks[key]

    def _pick_allowed(self, draws: torch.Tensor) -> torch.Tensor:
        """The r blocks of largest draw outside each row's window and the global blocks.

        draws: (H, nb − 2, nb) uniform in [0, 1) -> (H, nb − 2, r) int64.
        """
        num_blocks = draws.shape[-1]
        rows = torch.arange(1, num_blocks - 1, device=draws.device)[:, None]
        columns = torch.arange(num_blocks, device=draws.device)[None, :]
        allowed = ((columns - rows).abs() > 1) & (columns > 0) & (columns < num_blocks - 1)  # (nb − 2, nb)
        draws = draws.masked_fill(~allowed, -1.0)  # uniform draws are >= 0: disallowed never win
        return draws.topk(self.num_random_blocks, dim=-1).indices

    def key_block_table(
        self, num_blocks: int, device: torch.device | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The key blocks of every non-global query block and which of them count.

        Returns table (H, nb − 2, 5 + r) int64: blocks 0, i − 1, i, i + 1, nb − 1, then the random
        ones, for query block i = 1 … nb − 2; and duplicate (nb − 2, 5 + r) bool, True where a window
        block repeats a global one (i − 1 = 0 for i = 1, i + 1 = nb − 1 for i = nb − 2), so that it
        is counted once.
        """
        middle = torch.arange(1, num_blocks - 1, device=device)[:, None]
        fixed = torch.cat(
            [
                torch.zeros_like(middle),
                middle - 1,
                middle,
                middle + 1,
                torch.full_like(middle, num_blocks - 1),
            ],
            dim=1,
        )
        table = torch.cat(
            [fixed.expand(self.num_heads, -1, -1), self.random_blocks(num_blocks, device)], dim=-1
        )
        duplicate = torch.zeros(num_blocks - 2, table.shape[-1], dtype=torch.bool, device=device)
        duplicate[0, 1] = True
        duplicate[-1, 3] = True
        return table, duplicate

    state_size = staticmethod(every_key_and_value)

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        check_inputs(q, k, v, mask)
        length = q.shape[-2]
        num_blocks = -(-length // self.block_size)
        with torch.autocast(device_type=q.device.type, enabled=False):
            if num_blocks < self.min_blocks():
                out = F.scaled_dot_product_attention(
                    q.float(), k.float(), v.float(), attn_mask=key_padding_bias(mask, torch.float32)
                )
            else:
                out = self._attend_blocks(q.float(), k.float(), v.float(), mask, num_blocks)
        return out.to(q.dtype)

    def _attend_blocks(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, num_blocks: int
    ) -> torch.Tensor:
        """float32 (B, H, N, D) in and out, for nb >= ``min_blocks()`` blocks."""
        batch, heads, length, dim = q.shape
        size, extra = self.block_size, num_blocks * self.block_size - length
        real = F.pad(real_tokens(q, mask), (0, extra), value=False)  # (B, nb·b)
        q, k, v = (F.pad(x, (0, 0, 0, extra)) for x in (q, k, v))
        bias = key_padding_bias(real, q.dtype)  # (B, 1, 1, nb·b)

        # global query blocks 0 and nb − 1: every key
        global_queries = torch.cat([q[:, :, :size], q[:, :, -size:]], dim=2)  # (B, H, 2b, D)
        global_out = F.scaled_dot_product_attention(global_queries, k, v, attn_mask=bias)  # (B, H, 2b, D)

        # query blocks 1 … nb − 2: the key blocks of the table, gathered per head
        table, duplicate = self.key_block_table(num_blocks, q.device)  # (H, nb − 2, S), (nb − 2, S)
        slots = table.shape[-1]
        flat_blocks = (table + num_blocks * torch.arange(heads, device=q.device)[:, None, None]).flatten()
        keys = k.reshape(batch, heads * num_blocks, size * dim).index_select(1, flat_blocks)
        values = v.reshape(batch, heads * num_blocks, size * dim).index_select(1, flat_blocks)
        keys = keys.view(batch, heads * (num_blocks - 2), slots * size, dim)  # (B, H·(nb − 2), S·b, D)
        values = values.view(batch, heads * (num_blocks - 2), slots * size, dim)
        key_bias = bias.view(batch, num_blocks, size)[:, table]  # (B, H, nb − 2, S, b)
        key_bias = key_bias.masked_fill(duplicate[:, :, None], torch.finfo(q.dtype).min / 2)
        key_bias = key_bias.view(batch, heads * (num_blocks - 2), 1, slots * size)
        # (B, H·(nb − 2), b, D): each middle query block attends to its S key blocks
        middle_queries = q[:, :, size:-size].reshape(batch, heads * (num_blocks - 2), size, dim)
        middle_out = F.scaled_dot_product_attention(middle_queries, keys, values, attn_mask=key_bias)

        # reshape, not view: a fused CUDA kernel may return its output in another memory layout
        middle_out = middle_out.reshape(batch, heads, (num_blocks - 2) * size, dim)
        out = torch.cat([global_out[:, :, :size], middle_out, global_out[:, :, size:]], dim=2)
        return out[:, :, :length]
