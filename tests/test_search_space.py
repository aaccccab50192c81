"""The search space of ``hparams_search=lra``: Hydra override strings as Optuna distributions, clipped to
what the task allows, and every value of every task × attention search space builds a model."""

from __future__ import annotations

import json

import pytest
from conftest import CONF_DIR, TASKS
from helpers.records import model_of
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, OmegaConf, open_dict

import attention_zoo
from lra.config.errors import ConfigError
from lra.job.checks import check_config

pytest.importorskip("optuna", reason="the `search` extra is not installed")
from optuna.distributions import (  # noqa: E402
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

from lra.search.space import clip_to_task, clipped, search_space  # noqa: E402

SEARCH = "hparams_search=lra"
TINY_MODEL = ["model.dim=8", "model.ffn_dim=16", "model.classifier_dim=8", "model.depth=1"]


def test_each_override_form_becomes_its_distribution():
    space, fixed = search_space(
        [
            "a=choice(32, 64, x)",
            "b=1,2",
            "c=interval(0, 0.3)",
            "d=int(interval(80, 8000))",
            "e=tag(log, interval(1e-5, 1e-3))",
            "f=tag(log, int(interval(1, 64)))",
            "g=range(1, 10, 3)",
            "h=range(0.1, 0.5, 0.1)",
            "i=range(10, 1, -3)",
            "j=shuffle(range(1, 4))",
            "task=listops",
            "+k.l=3",
        ]
    )
    assert space["a"] == CategoricalDistribution([32, 64, "x"])
    assert space["b"] == CategoricalDistribution([1, 2])
    assert space["c"] == FloatDistribution(0.0, 0.3)
    assert space["d"] == IntDistribution(80, 8000)
    assert space["e"] == FloatDistribution(1e-5, 1e-3, log=True)
    assert space["f"] == IntDistribution(1, 64, log=True)
    # A range stops before its end, as Hydra's and Python's: 1, 4, 7 (not 10); 0.1 .. 0.4 (not 0.5).
    assert space["g"] == IntDistribution(1, 7, step=3)
    assert space["h"] == FloatDistribution(0.1, 0.4, step=0.1)
    assert space["i"] == IntDistribution(4, 10, step=3)
    assert sorted(space["j"].choices) == [1, 2, 3]
    assert fixed == {"task": "task=listops", "k.l": "+k.l=3"}


def test_a_later_override_of_a_key_replaces_an_earlier_one():
    space, fixed = search_space(["a=choice(1, 2)", "a=3", "b=4", "b=interval(0, 1)"])
    assert space == {"b": FloatDistribution(0.0, 1.0)} and fixed == {"a": "a=3"}


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("a=glob(x*)", "a=glob(x*): a search samples choice, interval or range"),
        ("a=tag(foo, interval(1, 2))", "a search reads one tag, log, on an interval"),
        ("a=tag(log, choice(1, 2))", "a search reads one tag, log, on an interval"),
        ("a=range(1, 1)", "a=range(1, 1): it gives no value"),
        ("a=interval(2, 1)", "a=interval(2, 1): "),  # then Optuna's words, which vary by version
        ("a=tag(log, int(interval(0, 4)))", "a=tag(log, int(interval(0, 4))): "),
        ("a=choice(", "a=choice(: "),
    ],
)
def test_a_bad_override_is_one_line_that_names_it(override, message):
    with pytest.raises(ConfigError) as refused:
        search_space(["b=1", override])
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_a_budget_range_is_clipped_at_a_limit():
    assert clipped(CategoricalDistribution([32, 64, 128, 256]), 64) == CategoricalDistribution([32, 64])
    assert clipped(CategoricalDistribution([32, 64, 128]), 48) == CategoricalDistribution([32, 48])
    assert clipped(CategoricalDistribution(["a", 128]), 64) == CategoricalDistribution(["a", 128])
    assert clipped(IntDistribution(16, 256, log=True), 64) == IntDistribution(16, 64, log=True)
    assert clipped(IntDistribution(1, 10, step=3), 8) == IntDistribution(1, 7, step=3)
    assert clipped(IntDistribution(100, 200), 64) == IntDistribution(64, 64)
    assert clipped(FloatDistribution(0.1, 0.5, step=0.1), 0.3) == FloatDistribution(0.1, 0.3, step=0.1)
    assert clipped(IntDistribution(1, 32), 64) == IntDistribution(1, 32)


def search_config(task: str, attention: str, *extra: str) -> tuple[DictConfig, dict[str, BaseDistribution]]:
    """The config of one trial of ``hparams_search=lra`` (a tiny model) and its search space, clipped."""
    overrides = [SEARCH, f"task={task}", f"attention={attention}", *TINY_MODEL, *extra]
    cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
    params = OmegaConf.to_container(cfg.hydra.sweeper.params)
    space, fixed = search_space([f"{key}={value}" for key, value in params.items()])
    assert not fixed, (task, attention)
    space = clip_to_task(space, cfg)
    with open_dict(cfg):
        del cfg["hydra"]
    return cfg, space


def distinct_values(distribution: BaseDistribution) -> list:
    """Each choice, or both ends of a range."""
    if isinstance(distribution, CategoricalDistribution):
        return list(distribution.choices)
    return sorted({distribution.low, distribution.high})


def test_the_demo_search_clips_every_budget_to_its_64_tokens():
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        assert search_config("listops", "nystrom", "experiment=demo")[1]["attention.num_landmarks"] == (
            CategoricalDistribution([32, 64])
        )
        assert search_config("listops", "linformer", "experiment=demo")[1]["attention.proj_dim"] == (
            CategoricalDistribution([64])
        )
        performer = search_config("listops", "performer", "experiment=demo")[1]["attention.num_features"]
        assert performer == CategoricalDistribution([64, 128, 256])  # no limit: more features, closer


def model_inputs(cfg: DictConfig) -> str:
    """What ``build_model`` reads of ``cfg``, as text: two configs with the same build the same model."""
    task = {key: cfg.task[key] for key in ("seq_len", "vocab_size", "num_classes", "dual")}
    parts = {key: OmegaConf.to_container(cfg[key], resolve=True) for key in ("model", "attention")}
    return json.dumps({"task": task, **parts}, sort_keys=True)


@pytest.mark.slow  # composes 70 configs and builds a few hundred tiny models
def test_every_value_of_every_task_and_attention_search_space_builds_a_model():
    """Every task (Path-X too) and the demo × every attention: the space samples the task's and the
    attention's options, and each choice and each end of each range passes the config checks and builds
    the model (at the task's sequence length, with a tiny width)."""
    settings = [(task, ()) for task in (*TASKS, "pathx")] + [("listops", ("experiment=demo",))]
    built: set[str] = set()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        for task, extra in settings:
            for attention in attention_zoo.available():
                cfg, space = search_config(task, attention, *extra)
                assert {"task.lr", "task.warmup_steps", "task.weight_decay", "model.dropout"} <= set(space)
                budget = attention_zoo.spec(attention).budget_option
                assert budget is None or f"attention.{budget}" in space, attention
                for key, distribution in space.items():
                    for value in distinct_values(distribution):
                        trial = cfg.copy()
                        OmegaConf.update(trial, key, value, merge=False)
                        check_config(trial)
                        if (inputs := model_inputs(trial)) not in built:
                            model_of(trial)
                            built.add(inputs)
