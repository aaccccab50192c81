"""The shared LRA encoder (docs/design.md § The encoder): one small Transformer for every task × attention.

Token embedding + learned absolute position embedding, both drawn from N(0, 0.02²) as in both
papers' code; ``depth`` pre-LayerNorm blocks (multi-head self-attention around a zoo core, then a
GELU feed-forward); a final LayerNorm (the ``Encoder``'s token states, which self-pretraining
predicts masked tokens from); mean pooling over the real tokens; an MLP classifier. Retrieval
(``dual=True``) encodes both documents with the same encoder and classifies ``[u, v, u*v, u-v]``.

The S4 repository's backbone is the same frame with other options (``experiment=s4``): no position
embedding (``positions=False``), blocks without the feed-forward (``ffn_dim=0``), BatchNorm
(``norm="batch"``), post-norm blocks without a final norm (``prenorm=False``), channel dropout on the
mixer's output (``mixer_dropout``), no weight decay on the blocks' biases and norms
(``decay_norms_biases=False``) and a linear classifier (``classifier_dim=[]``).

The attention is a factory that the encoder calls once per layer with the shapes it knows,
``attention(dim=dim, head_dim=dim // num_heads, num_heads=num_heads, seq_len=seq_len)``, e.g.
``functools.partial(attention_zoo.build_attention, "nystrom", num_landmarks=64)``. It returns a core,
which the block wraps in ``MultiHeadSelfAttention``, or a mixer (``attention_zoo.is_mixer``), which
takes that wrapper's place as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import torch
from torch import nn

from attention_zoo import MultiHeadSelfAttention, is_mixer, tie_layers

EMBEDDING_INIT_STD = 0.02  # the Skyformer and Nyströmformer authors' initialisation of both embeddings


def padding_mask(lengths: torch.Tensor, seq_len: int) -> torch.Tensor:
    """True at real positions: lengths (B,) -> (B, seq_len) bool, position < length.

    Pixel tasks store every length as the full image, so a black pixel (token 0) is a real token.
    """
    return torch.arange(seq_len, device=lengths.device)[None, :] < lengths[:, None]


class AttentionFactory(Protocol):
    """Builds a layer's attention core or mixer from its shapes (``attention_zoo.build_attention``)."""

    def __call__(self, *, dim: int, head_dim: int, num_heads: int, seq_len: int) -> nn.Module: ...


class SequenceBatchNorm(nn.BatchNorm1d):
    """BatchNorm of each feature over the batch and every position, padding included (S4's
    ``norm: batch``): (B, N, dim) -> (B, N, dim)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x.transpose(1, 2)).transpose(1, 2)


NORMS: dict[str, Callable[[int], nn.Module]] = {"layer": nn.LayerNorm, "batch": SequenceBatchNorm}


class EncoderBlock(nn.Module):
    """Transformer block: (B, N, dim), mask (B, N) -> (B, N, dim). ``attention`` mixes the tokens:
    ``core`` in a ``MultiHeadSelfAttention``, or ``core`` itself when it is a mixer (its output then
    through ``mixer_dropout`` of whole channels, S4's tied dropout); a GELU feed-forward follows unless
    ``ffn_dim`` is 0. Each sub-layer is ``x + f(norm(x))`` (``prenorm``) or ``norm(x + f(x))``."""

    def __init__(
        self,
        dim: int,
        num_heads: int,
        ffn_dim: int,
        dropout: float,
        core: nn.Module,
        norm: str = "layer",
        prenorm: bool = True,
        mixer_dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.prenorm = prenorm
        self.attention_norm = NORMS[norm](dim)
        mixer = is_mixer(core)
        self.attention = core if mixer else MultiHeadSelfAttention(dim, num_heads, core, dropout)
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


def exempt_norms_and_biases(module: nn.Module) -> None:
    """Train the biases and normalisation weights inside ``module`` without weight decay, declared as
    ``_optim`` for ``lra.module.parameter_groups`` (the S4 repository's ``add_optimizer_hooks``)."""
    for sub in module.modules():
        for name, parameter in sub.named_parameters(recurse=False):
            if name.endswith("bias") or isinstance(sub, (nn.LayerNorm, nn.BatchNorm1d)):
                parameter._optim = {"weight_decay": 0.0} | getattr(parameter, "_optim", {})


def mean_pool(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The mean of the token states over the real positions: (B, N, dim), mask (B, N) -> (B, dim)."""
    weights = mask.to(states.dtype)[..., None]  # (B, N, 1)
    return (states * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)


class Encoder(nn.Module):
    """Tokens to their states after the final norm (none after post-norm blocks): tokens (B, N),
    mask (B, N) bool -> (B, N, dim). The options after ``dropout``: the module docstring's."""

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
        embedding_init_std: float = EMBEDDING_INIT_STD,
        positions: bool = True,
        norm: str = "layer",
        prenorm: bool = True,
        mixer_dropout: float = 0.0,
        decay_norms_biases: bool = True,
    ) -> None:
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"model.dim={dim} must be a multiple of model.num_heads={num_heads}")
        if norm not in NORMS:
            raise ValueError(f"model.norm={norm!r} is not one of {', '.join(NORMS)}")
        self.token_embedding = nn.Embedding(vocab_size, dim)
        nn.init.normal_(self.token_embedding.weight, std=embedding_init_std)
        self.position_embedding = nn.Embedding(seq_len, dim) if positions else None
        if self.position_embedding is not None:
            nn.init.normal_(self.position_embedding.weight, std=EMBEDDING_INIT_STD)
        self.dropout = nn.Dropout(dropout)
        shapes = {"dim": dim, "head_dim": dim // num_heads, "num_heads": num_heads, "seq_len": seq_len}
        block_options = {"norm": norm, "prenorm": prenorm, "mixer_dropout": mixer_dropout}
        self.blocks = nn.ModuleList(
            EncoderBlock(dim, num_heads, ffn_dim, dropout, attention(**shapes), **block_options)
            for _ in range(depth)
        )
        cores = [getattr(block.attention, "core", block.attention) for block in self.blocks]
        tie_layers(cores)  # cross-layer sharing options
        self.norm = NORMS[norm](dim) if prenorm else nn.Identity()  # post-norm blocks end normalised
        if not decay_norms_biases:
            exempt_norms_and_biases(self.blocks)
            exempt_norms_and_biases(self.norm)

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.token_embedding(tokens)
        if self.position_embedding is not None:
            x = x + self.position_embedding(torch.arange(tokens.shape[1], device=tokens.device))[None]
        x = self.dropout(x)
        for block in self.blocks:
            x = block(x, mask)
        return self.norm(x)


ACTIVATIONS: dict[str, Callable[[], nn.Module]] = {"relu": nn.ReLU, "gelu": nn.GELU}


class LRAClassifier(nn.Module):
    """The LRA classifier. forward(tokens, lengths) -> logits (B, num_classes).

    tokens: (B, L) long, or (B, 2, L) when ``dual`` (retrieval: two documents per example);
    lengths: (B,) or (B, 2), the number of real tokens (the mask is ``position < length``).
    ``attention`` builds a fresh attention core for each layer from the shapes the encoder passes
    (see the module docstring); ``encoder_options`` go to ``Encoder``.
    ``classifier_dim``: the classifier's hidden widths (an int: one hidden layer), each followed by
    ``classifier_activation``.
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
        classifier_activation: str = "relu",
        **encoder_options,
    ) -> None:
        super().__init__()
        if classifier_activation not in ACTIVATIONS:
            valid = ", ".join(ACTIVATIONS)
            raise ValueError(f"model.classifier_activation={classifier_activation!r} is not one of {valid}")
        self.seq_len = seq_len
        self.dual = dual
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
        widths = [4 * dim if dual else dim, *hidden]
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
        return self.classifier(torch.cat([u, v, u * v, u - v], dim=-1))

    def pooled(self, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """One vector per sequence: tokens (B, N), mask (B, N) -> (B, dim)."""
        return mean_pool(self.encoder(tokens, mask), mask)
