"""The shared LRA encoder (docs/design.md § The encoder): one small Transformer for every task × attention.

Token embedding + absolute positions (learned, drawn from N(0, 0.02²) as in the papers' code, or LRA's
fixed sinusoids), or rotary positions on q and k in every block instead (``position="rope"``,
``lra.model.positions``), an optional learned CLS token in front; ``depth`` pre-LayerNorm blocks (multi-head
self-attention around a zoo core, then a GELU feed-forward); a final LayerNorm (the ``Encoder``'s token
states, which self-pretraining predicts masked tokens from); pooling (the mean or the maximum over the real
positions, or the first position's state: the CLS token's when there is one); an MLP classifier. Retrieval
(``dual=True``) encodes both documents with the same encoder and classifies ``[u, v, u*v, u-v]``
(``dual_features="nli"``) or ``[u, v]`` (``"concat"``, the LRA code's).

The S4 repository's backbone is the same frame with other options (``experiment=s4``): no position
embedding (``positions=False``), blocks without the feed-forward (``ffn_dim=0``), BatchNorm
(``norm="batch"``), post-norm blocks without a final norm (``prenorm=False``), channel dropout on the
mixer's output (``mixer_dropout``), no weight decay on the blocks' biases and norms
(``decay_norms_biases=False``) and a linear classifier (``classifier_dim=[]``).

The attention is a factory that the encoder calls once per layer with the shapes it knows,
``attention(dim=dim, head_dim=qkv_dim // num_heads, num_heads=num_heads, seq_len=positions)`` (and
``causal=True`` under ``causal``), e.g. ``partial(attention_zoo.build_attention, "nystrom")``. It returns a
core, which the block wraps in ``MultiHeadSelfAttention``, or a mixer (``is_mixer``) to hold in its place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import torch
from torch import nn

from attention_zoo import MultiHeadSelfAttention, check_rope, is_mixer, tie_layers
from attention_zoo.registry import spec_of
from lra.model.heads import ACTIVATIONS, DUAL_FEATURES, POOLINGS
from lra.model.norms import NORMS, exempt_norms_and_biases
from lra.model.positions import absolute_table, sinusoids

EMBEDDING_INIT_STD = 0.02  # the Skyformer and Nyströmformer authors' initialisation of both embeddings


def padding_mask(lengths: torch.Tensor, seq_len: int) -> torch.Tensor:
    """True at real positions: lengths (B,) -> (B, seq_len) bool, position < length.

    Pixel tasks store every length as the full image, so a black pixel (token 0) is a real token.
    """
    return torch.arange(seq_len, device=lengths.device)[None, :] < lengths[:, None]


class AttentionFactory(Protocol):
    """Builds a layer's attention core or mixer from its shapes (``attention_zoo.build_attention``)."""

    def __call__(
        self, *, dim: int, head_dim: int, num_heads: int, seq_len: int, **causal: bool
    ) -> nn.Module: ...


class EncoderBlock(nn.Module):
    """Transformer block: (B, N, dim), mask (B, N) -> (B, N, dim). ``attention`` mixes the tokens:
    ``core`` in a ``MultiHeadSelfAttention``, or ``core`` itself when it is a mixer (its output then
    through ``mixer_dropout`` of whole channels, S4's tied dropout); a GELU feed-forward follows unless
    ``ffn_dim`` is 0. Each sub-layer is ``x + f(norm(x))`` (``prenorm``) or ``norm(x + f(x))``.
    ``rope_fraction`` (None: off) rotates q and k before the core; a mixer refuses it in one line."""

    def __init__(
        self,
        dim: int,
        num_heads: int,
        ffn_dim: int,
        dropout: float,
        core: nn.Module,
        qkv_dim: int | None = None,
        qkv_bias: bool = True,
        norm: str = "layer",
        prenorm: bool = True,
        mixer_dropout: float = 0.0,
        rope_fraction: float | None = None,
    ) -> None:
        super().__init__()
        self.prenorm = prenorm
        self.attention_norm = NORMS[norm](dim)
        mixer = is_mixer(core)
        if mixer and rope_fraction is not None:
            check_rope(spec_of(core).name)
        self.attention = (
            core
            if mixer
            else MultiHeadSelfAttention(dim, num_heads, core, dropout, qkv_dim, qkv_bias, rope_fraction)
        )
        self.mixer_dropout = nn.Dropout1d(mixer_dropout) if mixer and mixer_dropout else nn.Identity()
        self.ffn_norm = NORMS[norm](dim) if ffn_dim else None
        self.ffn = None
        if ffn_dim:
            self.ffn = nn.Sequential(
                nn.Linear(dim, ffn_dim),
                nn.GELU(),
                nn.Dropout(dropout),
                nn.Linear(ffn_dim, dim),
                nn.Dropout(dropout),
            )

    def sublayer(
        self, x: torch.Tensor, norm: nn.Module, branch: Callable[[torch.Tensor], torch.Tensor]
    ) -> torch.Tensor:
        """One residual sub-layer, pre- or post-norm: (B, N, dim) -> (B, N, dim)."""
        return x + branch(norm(x)) if self.prenorm else norm(x + branch(x))

    def mix(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The token-mixing branch: (B, N, dim) -> (B, N, dim)."""
        return self.mixer_dropout(self.attention(x, mask).transpose(1, 2)).transpose(1, 2)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.sublayer(x, self.attention_norm, lambda y: self.mix(y, mask))
        return x if self.ffn is None else self.sublayer(x, self.ffn_norm, self.ffn)


def choice(option: str, value: str, valid: dict) -> None:
    """A one-line ``ValueError`` naming the valid values when ``value`` is not one of ``valid``."""
    if value not in valid:
        raise ValueError(f"model.{option}={value!r} is not one of {', '.join(valid)}")


class Encoder(nn.Module):
    """Tokens to their states after the final norm (none after post-norm blocks): tokens (B, N),
    mask (B, N) bool -> (B, N, dim). The options after ``dropout``: the module docstring's.

    ``encode`` gives every position's state, the CLS token's first when ``cls_token`` (B, 1 + N, dim).
    Positions are learned (``learn_pos_emb``) or LRA's fixed sinusoids, or absent (``positions=False``);
    ``position="rope"`` rotates ``rope_fraction`` of each head's q and k instead, with no absolute embedding.
    ``causal`` builds every layer's attention in its causal form (the factory gets ``causal=True``).
    """

    def __init__(
        self,
        *,
        vocab_size: int,
        seq_len: int,
        attention: AttentionFactory,
        dim: int,
        depth: int,
        num_heads: int,
        ffn_dim: int,
        dropout: float,
        qkv_dim: int | None = None,
        qkv_bias: bool = True,
        learn_pos_emb: bool = True,
        cls_token: bool = False,
        embedding_init_std: float = EMBEDDING_INIT_STD,
        positions: bool = True,
        norm: str = "layer",
        prenorm: bool = True,
        mixer_dropout: float = 0.0,
        decay_norms_biases: bool = True,
        position: str = "absolute",
        rope_fraction: float = 1.0,
        causal: bool = False,
    ) -> None:
        super().__init__()
        choice("norm", norm, NORMS)
        table = absolute_table(position, positions, learn_pos_emb)
        qkv_key, qkv_width = ("model.qkv_dim", qkv_dim) if qkv_dim else ("model.dim", dim)
        if qkv_width % num_heads:
            raise ValueError(f"{qkv_key}={qkv_width} must be a multiple of model.num_heads={num_heads}")
        self.prefix = int(cls_token)  # positions in front of the tokens
        length = seq_len + self.prefix
        self.token_embedding = nn.Embedding(vocab_size, dim)
        nn.init.normal_(self.token_embedding.weight, std=embedding_init_std)
        self.position_embedding = nn.Embedding(length, dim) if table == "learned" else None
        if self.position_embedding is not None:
            nn.init.normal_(self.position_embedding.weight, std=EMBEDDING_INIT_STD)
        fixed = sinusoids(length, dim) if table == "sinusoids" else None
        self.register_buffer("position_table", fixed, persistent=False)  # LRA's table, not a parameter
        self.cls = nn.Parameter(torch.zeros(1, 1, dim)) if cls_token else None
        self.dropout = nn.Dropout(dropout)
        shapes = {"dim": dim, "head_dim": qkv_width // num_heads, "num_heads": num_heads, "seq_len": length}
        shapes |= {"causal": True} if causal else {}  # a factory without a causal form need not know it
        rope = rope_fraction if position == "rope" else None
        block_options = {
            "norm": norm,
            "prenorm": prenorm,
            "mixer_dropout": mixer_dropout,
            "rope_fraction": rope,
        }
        self.blocks = nn.ModuleList(
            EncoderBlock(
                dim, num_heads, ffn_dim, dropout, attention(**shapes), qkv_dim, qkv_bias, **block_options
            )
            for _ in range(depth)
        )
        cores = [getattr(block.attention, "core", block.attention) for block in self.blocks]
        tie_layers(cores)  # cross-layer sharing options
        self.norm = NORMS[norm](dim) if prenorm else nn.Identity()  # post-norm blocks end normalised
        if not decay_norms_biases:
            exempt_norms_and_biases(self.blocks)
            exempt_norms_and_biases(self.norm)

    def encode(self, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Every position's state: tokens (B, N), mask (B, N) -> (B, prefix + N, dim)."""
        x = self.token_embedding(tokens)
        if self.cls is not None:
            x = torch.cat([self.cls.expand(len(x), -1, -1), x], dim=1)
            mask = torch.cat([mask.new_ones(len(x), 1), mask], dim=1)
        table = self.position_table if self.position_embedding is None else self.position_embedding.weight
        if table is not None:
            x = x + table[: x.shape[1]][None]
        x = self.dropout(x)
        for block in self.blocks:
            x = block(x, mask)
        return self.norm(x)

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.encode(tokens, mask)[:, self.prefix :]


class LRAClassifier(nn.Module):
    """The LRA classifier. forward(tokens, lengths) -> logits (B, num_classes).

    tokens: (B, L) long, or (B, 2, L) when ``dual`` (retrieval: two documents per example);
    lengths: (B,) or (B, 2), the number of real tokens (the mask is ``position < length``).
    ``attention`` builds a fresh attention core for each layer from the shapes the encoder passes
    (see the module docstring); ``encoder_options`` go to ``Encoder`` (qkv width, positions, CLS).
    ``classifier_dim``: the classifier's hidden widths (an int: one hidden layer; ``[]``: a linear
    classifier), each followed by ``classifier_activation`` (ReLU, or GELU).
    """

    def __init__(
        self,
        *,
        vocab_size: int,
        num_classes: int,
        seq_len: int,
        attention: AttentionFactory,
        dim: int = 64,
        depth: int = 2,
        num_heads: int = 2,
        ffn_dim: int = 128,
        dropout: float = 0.1,
        dual: bool = False,
        classifier_dim: int | Sequence[int] = 128,
        pooling: str = "mean",
        dual_features: str = "nli",
        classifier_activation: str = "relu",
        **encoder_options,
    ) -> None:
        super().__init__()
        choice("pooling", pooling, POOLINGS)
        choice("dual_features", dual_features, DUAL_FEATURES)
        choice("classifier_activation", classifier_activation, ACTIVATIONS)
        self.seq_len = seq_len
        self.dual = dual
        self.pool = POOLINGS[pooling]
        self.combine, factor = DUAL_FEATURES[dual_features]
        self.encoder = Encoder(
            vocab_size=vocab_size,
            seq_len=seq_len,
            attention=attention,
            dim=dim,
            depth=depth,
            num_heads=num_heads,
            ffn_dim=ffn_dim,
            dropout=dropout,
            **encoder_options,
        )
        hidden = [classifier_dim] if isinstance(classifier_dim, int) else list(classifier_dim)
        widths = [factor * dim if dual else dim, *hidden]
        layers: list[nn.Module] = []
        for width_in, width_out in zip(widths, widths[1:], strict=False):
            layers += [nn.Linear(width_in, width_out), ACTIVATIONS[classifier_activation]()]
        self.classifier = nn.Sequential(*layers, nn.Linear(widths[-1], num_classes))

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        expected_dims = 3 if self.dual else 2
        if tokens.dim() != expected_dims or tokens.shape[-1] > self.seq_len:
            layout = "(batch, 2, seq)" if self.dual else "(batch, seq)"
            raise ValueError(f"tokens must be {layout} with seq <= {self.seq_len}, got {tuple(tokens.shape)}")
        seq = tokens.shape[-1]
        if not self.dual:
            return self.classifier(self.pooled(tokens, padding_mask(lengths, seq)))
        batch = tokens.shape[0]
        pooled = self.pooled(tokens.reshape(2 * batch, seq), padding_mask(lengths.reshape(2 * batch), seq))
        u, v = pooled.view(batch, 2, -1).unbind(dim=1)
        return self.classifier(self.combine(u, v))

    def pooled(self, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """One vector per sequence: tokens (B, N), mask (B, N) -> (B, dim)."""
        states = self.encoder.encode(tokens, mask)
        if self.encoder.prefix:  # the CLS token is a real position
            mask = torch.cat([mask.new_ones(len(mask), self.encoder.prefix), mask], dim=1)
        return self.pool(states, mask)
