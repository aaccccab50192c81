"""The registry's option validator: every option is checked against its constructor annotation."""

from __future__ import annotations

from typing import Literal

import pytest
from torch import nn

import attention_zoo
from attention_zoo.registry import (
    _REGISTRY,
    OddPositiveInt,
    PositiveFloat,
    PositiveInt,
    Probability,
    register_attention,
    register_mixer,
)


@pytest.fixture
def toy_core():
    """A core with one option of every kind, registered for the test only."""

    @register_attention("toy")
    class ToyCore(nn.Module):
        def __init__(
            self,
            *,
            head_dim: int,
            num_heads: int,
            seq_len: int,
            count: PositiveInt = 4,
            kernel: OddPositiveInt | None = 3,
            ridge: PositiveFloat = 0.5,
            dropout: Probability = 0.0,
            layout: Literal["per_head", "shared"] = "per_head",
            tied: bool = True,
        ) -> None:
            super().__init__()
            self.options = {"count": count, "kernel": kernel, "ridge": ridge, "dropout": dropout}
            self.options |= {"layout": layout, "tied": tied}

    yield "toy"
    del _REGISTRY["toy"]


@pytest.mark.parametrize(
    ("option", "value", "valid"),
    [
        ("count", True, "an integer >= 1"),
        ("count", 2.0, "an integer >= 1"),
        ("count", 0, "an integer >= 1"),
        ("count", "4", "an integer >= 1"),
        ("kernel", 4, "an odd integer >= 1 or null"),
        ("kernel", False, "an odd integer >= 1 or null"),
        ("ridge", 0, "a number > 0"),
        ("ridge", float("nan"), "a number > 0"),
        ("ridge", None, "a number > 0"),
        ("dropout", 1.0, r"a number in \[0, 1\)"),
        ("dropout", -0.1, r"a number in \[0, 1\)"),
        ("layout", "per_layer", "one of 'per_head', 'shared'"),
        ("tied", 1, r"a boolean \(true or false\)"),
    ],
)
def test_a_wrong_value_names_the_core_the_option_the_value_and_what_is_valid(toy_core, option, value, valid):
    with pytest.raises(ValueError, match=rf"^attention 'toy': {option} must be {valid}, got {value!r}$"):
        attention_zoo.build_attention(toy_core, **{option: value})


def test_valid_values_are_accepted_and_a_float_option_takes_an_int(toy_core):
    core = attention_zoo.build_attention(
        toy_core, count=7, kernel=None, ridge=2, dropout=0.5, layout="shared", tied=False
    )
    assert core.options == {
        "count": 7, "kernel": None, "ridge": 2.0, "dropout": 0.5, "layout": "shared", "tied": False
    }  # fmt: skip
    assert isinstance(core.options["ridge"], float)


@pytest.mark.parametrize("shape", ["head_dim", "num_heads", "seq_len"])
@pytest.mark.parametrize("value", [0, True, 3.0])
def test_shapes_must_be_positive_integers(shape, value):
    with pytest.raises(ValueError, match=rf"attention 'standard': {shape} must be an integer >= 1"):
        attention_zoo.build_attention("standard", **{shape: value})


def test_linformer_rejects_a_boolean_projection_size():
    with pytest.raises(ValueError, match="proj_dim must be an integer >= 1, got True"):
        attention_zoo.build_attention("linformer", proj_dim=True)


def test_an_option_without_an_annotation_cannot_be_registered():
    with pytest.raises(TypeError, match=r"options \['size'\] need a type annotation"):

        @register_attention("unannotated")
        class Unannotated(nn.Module):
            def __init__(self, *, head_dim: int, num_heads: int, seq_len: int, size=3) -> None:
                super().__init__()

    assert "unannotated" not in attention_zoo.available()


def test_a_mixer_cannot_take_a_cores_shape_argument_as_an_option():
    """The model never passes num_heads to a mixer: an option of that name would be silently lost."""
    with pytest.raises(TypeError, match=r"takes \['num_heads'\], shape arguments of the other kind"):

        @register_mixer("heads_as_option")
        class HeadsAsOption(nn.Module):
            def __init__(self, *, dim: int, seq_len: int, num_heads: PositiveInt = 4) -> None:
                super().__init__()

    assert "heads_as_option" not in attention_zoo.available()
