"""The mixers' options: bad values are one line naming what is valid, and the SSM parameters they
declare get their own AdamW group (learning rate, no weight decay) under every schedule."""

from __future__ import annotations

from functools import partial

import pytest
import torch
from conftest import compose_config
from helpers.records import model_of

import attention_zoo
from lra.config.errors import ConfigError
from lra.job.checks import check_config
from lra.model.encoder import LRAClassifier
from lra.model.module import adamw_with_schedule, parameter_groups


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("s4d", {"init": "legs"}, r"^attention 's4d': init must be one of 'lin', 'inv', got 'legs'$"),
        ("s4d", {"d_state": 0}, r"^attention 's4d': d_state must be an even integer >= 2, got 0$"),
        ("s4d", {"d_state": 5}, r"^attention 's4d': d_state must be an even integer >= 2, got 5$"),
        ("mamba", {"d_state": 0}, r"^attention 'mamba': d_state must be an integer >= 1, got 0$"),
        ("s4d", {"dt_min": 0.5, "dt_max": 0.1}, r"^attention 's4d': dt_min \(0.5\) must be at most dt_max"),
        (
            "standard",
            {"d_state": 4},
            r"^attention 'standard' has no option\(s\) \['d_state'\]; valid options: ",
        ),
        (
            "s4d",
            {"num_landmarks": 4},
            r"^attention 's4d' has no option\(s\) \['num_landmarks'\]; valid options: d_state=64",
        ),
        ("mamba", {"dim": 0}, r"^attention 'mamba': dim must be an integer >= 1, got 0$"),
        (
            "deltanet",
            {"key_dim": 30, "heads": 4},
            r"^attention 'deltanet': key_dim \(30\) must be a multiple of heads",
        ),
        (
            "gated_deltanet",
            {"expand_v": 1.3},
            r"^attention 'gated_deltanet': expand_v · dim must be an integer",
        ),
        ("hyena", {"emb_dim": 4}, r"^attention 'hyena': emb_dim must be an odd integer >= 3, got 4$"),
        (
            "hyena",
            {"filter_len": 0},
            r"^attention 'hyena': filter_len must be an integer >= 1 or null, got 0$",
        ),
    ],
)
def test_bad_values_are_one_line_naming_what_is_valid(name, options, message):
    with pytest.raises(ValueError, match=message) as caught:
        attention_zoo.build_attention(name, **options)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["attention=s4d", "attention.init=legs"], r"^attention 's4d': init must be one of 'lin', 'inv'"),
        (["attention=mamba", "attention.d_state=0"], r"^attention 'mamba': d_state must be an integer >= 1"),
        (["attention=mamba", "+attention.num_landmarks=8"], r"^attention 'mamba' has no option\(s\)"),
        (["attention=standard", "+attention.d_state=8"], r"^attention 'standard' has no option\(s\)"),
        (["attention=s4d", "attention.dt_min=1.0"], r"^cannot build the model: attention 's4d': dt_min"),
    ],
)
def test_bad_config_values_stop_before_training_in_one_line(overrides, message):
    cfg = compose_config(overrides)
    with pytest.raises(ConfigError, match=message) as caught:
        check_config(cfg)
        model_of(cfg)
    assert "\n" not in str(caught.value)


def classifier(name: str, **options) -> LRAClassifier:
    factory = partial(attention_zoo.build_attention, name, **options)
    return LRAClassifier(vocab_size=10, num_classes=2, seq_len=16, attention=factory, dim=16)


def test_s4d_trains_A_and_dt_at_its_lr_without_weight_decay():
    model = classifier("s4d", lr=0.003)
    ordinary, ssm = parameter_groups(model)
    names = {id(p): n for n, p in model.named_parameters()}
    assert sorted(names[id(p)].rsplit(".", 1)[-1] for p in ssm["params"]) == sorted(
        ["log_dt", "log_A_real", "A_imag"] * 2  # two layers
    )
    assert (ssm["lr"], ssm["weight_decay"]) == (0.003, 0.0)
    assert len(ordinary["params"]) + len(ssm["params"]) == len(list(model.parameters()))


def test_mamba_keeps_its_lr_and_drops_weight_decay_on_A_and_D():
    model = classifier("mamba")
    _, ssm = parameter_groups(model)
    assert ssm == {"params": ssm["params"], "weight_decay": 0.0}
    assert len(ssm["params"]) == 2 * 2 * 2  # A_log and D, two directions, two layers


def test_an_s4d_lr_of_null_is_the_run_lr():
    assert parameter_groups(classifier("s4d", lr=None))[1].keys() == {"params", "weight_decay"}


@pytest.mark.parametrize("schedule", ["warmup_linear", "warmup_constant", "one_cycle"])
def test_each_group_follows_the_schedule_at_its_own_lr(schedule):
    model = classifier("s4d", lr=0.002)
    configured = adamw_with_schedule(model, 0.1, 0.05, schedule, warmup_steps=4, max_steps=10)
    optimizer, scheduler = configured["optimizer"], configured["lr_scheduler"]["scheduler"]
    for _ in range(4):  # to the peak of the warm-up
        optimizer.step()
        scheduler.step()
    ordinary, ssm = optimizer.param_groups
    assert ordinary["weight_decay"] == 0.05 and ssm["weight_decay"] == 0.0
    assert ssm["lr"] == pytest.approx(ordinary["lr"] * 0.002 / 0.1)
    assert torch.isfinite(torch.tensor(ssm["lr"])) and ssm["lr"] > 0
