"""The token-level head of the recall tasks over the registry (docs/diagnostics.md): every registered
attention and mixer, and a plugin core, predicts at every position through the shared encoder with
padding invisible and sequences independent; under ``causal`` no position's prediction depends on a
later token; loss and accuracy count the labelled positions only, each query once."""

from __future__ import annotations

import functools

import pytest
import torch
from torch import nn

import attention_zoo
from attention_zoo.registry import _REGISTRY, register_attention
from lra.data import IGNORE
from lra.model.module import LRALitModule
from lra.model.token_head import TokenClassifier

SEQ, VOCAB, CLASSES = 24, 11, 7
SMALL = {"num_landmarks": 8, "proj_dim": 8, "num_features": 8, "window": 5, "block_size": 4, "chunk_size": 4}
ENCODER = {"dim": 16, "depth": 2, "num_heads": 2, "ffn_dim": 32, "dropout": 0.0}


def model(name: str, causal: bool = False, **options) -> TokenClassifier:
    """A token head over ``name`` (small budgets; a mixer one-directional under ``causal``)."""
    defaults = attention_zoo.spec(name).options
    chosen = {key: value for key, value in SMALL.items() if key in defaults} | options
    if causal and "bidirectional" in defaults:
        chosen["bidirectional"] = False
    torch.manual_seed(0)
    factory = functools.partial(attention_zoo.build_attention, name, **chosen)
    head = TokenClassifier(
        vocab_size=VOCAB, num_classes=CLASSES, seq_len=SEQ, attention=factory, causal=causal, **ENCODER
    )
    return head.eval()


def logits(head: nn.Module, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    torch.manual_seed(1234)  # the cores that draw in forward draw the same for every call
    return head(tokens, lengths)


@pytest.fixture
def plugin_core():
    """A plugin's core, registered as an entry point registers one: mean of the real values."""

    @register_attention("plugin_mean")
    class PluginMean(nn.Module):
        def __init__(self, *, head_dim: int, num_heads: int, seq_len: int) -> None:
            super().__init__()

        def forward(self, q, k, v, mask=None):  # (B, H, N, D) -> (B, H, N, D)
            real = torch.ones(v.shape[:-1]) if mask is None else mask[:, None, :].to(v.dtype)  # (B, H|1, N)
            mean = (v * real[..., None]).sum(-2, keepdim=True) / real.sum(-1)[..., None, None].clamp(min=1)
            return mean.expand_as(q)

    yield "plugin_mean"
    del _REGISTRY["plugin_mean"]


@pytest.mark.parametrize("name", [*attention_zoo.available(), "plugin"])
def test_every_entry_predicts_every_position_with_padding_invisible(name, request):
    if name == "plugin":
        name = request.getfixturevalue("plugin_core")
    head = model(name)
    tokens = torch.randint(1, VOCAB, (3, SEQ), generator=torch.Generator().manual_seed(0))
    lengths = torch.tensor([SEQ, 17, 5])
    out = logits(head, tokens, lengths)
    assert out.shape == (3, SEQ, CLASSES) and torch.isfinite(out).all()
    real = torch.arange(SEQ)[None, :] < lengths[:, None]  # (B, N)
    noisy = torch.where(real, tokens, torch.randint(1, VOCAB, tokens.shape))
    torch.testing.assert_close(logits(head, noisy, lengths)[real], out[real])  # padding changes nothing
    alone = logits(head, tokens[1:2], lengths[1:2])  # a sequence's predictions ignore the batch's others
    torch.testing.assert_close(alone[0][real[1]], out[1][real[1]], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "name", [name for name in attention_zoo.available() if attention_zoo.supports_causal(name)]
)
def test_under_causal_no_prediction_depends_on_a_later_token(name):
    head = model(name, causal=True)
    tokens = torch.randint(1, VOCAB, (2, SEQ), generator=torch.Generator().manual_seed(1))
    lengths = torch.tensor([SEQ, SEQ])
    out = logits(head, tokens, lengths)
    cut = SEQ // 2
    changed = tokens.clone()
    changed[:, cut:] = torch.randint(1, VOCAB, (2, SEQ - cut), generator=torch.Generator().manual_seed(2))
    torch.testing.assert_close(logits(head, changed, lengths)[:, :cut], out[:, :cut])
    assert not torch.allclose(logits(head, changed, lengths)[:, cut:], out[:, cut:])


class FixedLogits(nn.Module):
    """A model that returns the logits it holds: (B, N, C), whatever the tokens."""

    def __init__(self, values: torch.Tensor) -> None:
        super().__init__()
        self.values = values

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return self.values


def test_loss_and_accuracy_count_the_labelled_positions_each_query_once():
    values = torch.randn(2, 5, 4, generator=torch.Generator().manual_seed(0))  # (B, N, C)
    labels = torch.full((2, 5), IGNORE)
    labels[0, 1], labels[0, 3], labels[1, 4] = (
        values[0, 1].argmax(),
        (values[0, 3].argmax() + 1) % 4,
        values[1, 4].argmax(),
    )
    module = LRALitModule(
        FixedLogits(values), num_classes=4, lr=1e-3, weight_decay=0.0, warmup_steps=0, max_steps=10,
        schedule="warmup_linear", selectable_after=0, attention_name="fixed", token_level=True,
    )  # fmt: skip
    batch = (torch.zeros(2, 5, dtype=torch.long), torch.tensor([5, 5]), labels)
    module.evaluate(batch, module.test_loss, module.test_acc)
    labelled = labels != IGNORE
    expected_loss = nn.functional.cross_entropy(values[labelled], labels[labelled])
    expected_acc = (values[labelled].argmax(-1) == labels[labelled]).float().mean()
    torch.testing.assert_close(module.test_loss.compute(), expected_loss)
    torch.testing.assert_close(module.test_acc.compute(), expected_acc)
    assert expected_acc.item() == pytest.approx(2 / 3)  # two queries of three right, whatever the rest
