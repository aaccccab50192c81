"""The recall tasks in the ``task=`` group (conf/task/, docs/diagnostics.md): each composes with its
generator's shapes, resolves into a ``RecallRecord`` and a token head, records its state size, stops
on bad input with one line before training, and trains end to end."""

from __future__ import annotations

import pytest
from conftest import CONF_DIR, compose_config
from omegaconf import OmegaConf

import attention_zoo
from data_prep.recall import TASKS, build
from lra.config.errors import ConfigError
from lra.job.checks import check_config
from lra.job.resolve import job_records
from lra.job.train import run

TINY = ["trainer=smoke", "logger=none", "task.batch_size=4", "task.train_examples=8", "task.test_examples=4"]


@pytest.mark.parametrize("task", list(TASKS))
def test_every_recall_task_resolves_its_shapes_from_its_generator(task):
    cfg = compose_config([f"task={task}", "attention=standard"])
    records = job_records(cfg)
    generator = dict(cfg.task.generator)
    built = build(generator.pop("name"), **generator)
    assert (cfg.task.seq_len, cfg.task.vocab_size, cfg.task.num_classes) == (
        built.seq_len, built.vocab_size, built.num_classes,
    )  # fmt: skip
    assert records.data.recall.generator == task and records.data.recall.options == generator
    assert (records.model.head, records.optim.token_level) == ("token", True)
    assert "classifier_dim" not in records.model.options
    assert records.model.state_size == 2 * built.seq_len * cfg.model.dim  # standard: every key and value
    assert records.trainer.max_steps == cfg.task.max_steps


def test_an_lra_task_keeps_its_sequence_head_and_steps():
    records = job_records(compose_config(["task=listops", "attention=nystrom"]))
    assert (records.data.recall, records.model.head, records.optim.token_level) == (None, "sequence", False)
    assert records.trainer.max_steps == 50000 and records.model.state_size == 2 * 64 * 64


@pytest.mark.parametrize(
    ("overrides", "line"),
    [
        (["task=mqar", "+task.generator.seq_len=128"], "task.generator: mqar has no option 'seq_len': valid"),
        (["task=in_context_recall", "+task.generator.num_kv_pairs=4"], "in_context_recall has no option"),
        (["task=mqar", "task.generator.num_kv_pairs=40"], "does not fit input_seq_len=64: valid range 1..16"),
        (["task=mqar", "task.generator.vocab_size=10"], "vocab_size=10 is too small .*: valid range >= 18"),
        (["task=mqar", "task.train_examples=0"], "task.train_examples=0 is invalid"),
        (["task=mqar", "attention=nystrom", "model.causal=true"], "'nystrom' has no causal form; the causal"),
        (["task=mqar", "attention=s4d", "model.causal=true", "attention.bidirectional=true"],
         "'s4d': causal=True needs bidirectional=false, got true"),
    ],
)  # fmt: skip
def test_bad_input_stops_at_the_config_check_in_one_line(overrides, line):
    with pytest.raises(ConfigError, match=line) as raised:
        check_config(compose_config(overrides))
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("mixer", ["s4d", "mamba"])
def test_a_mixer_scans_one_way_under_causal_and_both_ways_otherwise(mixer):
    for causal in (False, True):
        cfg = compose_config(["task=mqar", f"attention={mixer}", f"model.causal={str(causal).lower()}"])
        check_config(cfg)
        assert cfg.attention.bidirectional is not causal


def test_a_causal_recall_run_trains_and_records_its_state_size(tmp_path):
    overrides = ["task=mqar", "attention=s4d", "model.causal=true", "task.generator.vocab_size=32", *TINY]
    summary = run(compose_config(overrides), tmp_path)
    assert summary["status"] == "completed", summary["error"]
    expected = attention_zoo.state_size("s4d", seq_len=64, dim=64, causal=True, bidirectional=False)
    assert summary["metrics"]["model/state_size"] == expected == 64 * 64
    assert summary["data"]["generator"]["vocab_size"] == 32 and summary["data"]["seed"] == 0
    assert 0 <= summary["metrics"]["test/acc"] <= 1


@pytest.mark.parametrize(
    ("preset", "expected"),
    [
        ("zoology", {"task.name": "mqar", "task.generator.num_kv_pairs": 4, "task.batch_size": 512,
                     "trainer.max_steps": 12480, "model.depth": 2, "model.ffn_dim": 0, "model.num_heads": 1}),
        ("mad", {"task.name": "in_context_recall", "task.batch_size": 128, "trainer.max_steps": 20000,
                 "model.dim": 128, "model.num_heads": 16, "model.dropout": 0.0}),
    ],
)  # fmt: skip
def test_the_recall_presets_are_causal_and_sweep_their_sources_grids(preset, expected):
    cfg = compose_config([f"experiment={preset}", "attention=mamba"])
    check_config(cfg)
    assert {key: OmegaConf.select(cfg, key) for key in expected} == expected
    assert cfg.model.causal and cfg.attention.bidirectional is False and cfg.model.position == "absolute"
    without = compose_config([f"experiment={preset}", "attention=nystrom"])  # no causal form
    check_config(without)
    assert (without.model.causal, without.model.position) == (False, "rope")
    swept = OmegaConf.load(CONF_DIR / "experiment" / f"{preset}.yaml").hydra.sweeper.params
    assert set(swept) == (
        {"model.dim", "task.lr"} if preset == "zoology" else {"task", "task.lr", "task.weight_decay"}
    )


TIER_TASKS = ["mqar", *(name for name in TASKS if name not in ("mqar", "induction"))]


MAD_TIER_TASKS = TIER_TASKS[1:]
BASED_FIGURE2_RATES = [1e-3, 3.1623e-3, 1e-2, 3.1623e-2]  # np.logspace(-3, -1.5, 4)


def tier_preset(task: str) -> str:
    """The CPU tier's preset of ``task``: MQAR's frontier, or MAD's six tasks."""
    return "diagnostics_cpu" if task == "mqar" else "diagnostics_cpu_mad"


def test_the_cpu_tier_sweeps_the_based_rates_and_two_state_sizes_and_mad_fewer():
    mqar = OmegaConf.load(CONF_DIR / "experiment" / "diagnostics_cpu.yaml")
    mad = OmegaConf.load(CONF_DIR / "experiment" / "diagnostics_cpu_mad.yaml")
    assert [float(rate) for rate in mqar.hydra.sweeper.params["task.lr"].split(",")] == BASED_FIGURE2_RATES
    assert mqar.hydra.sweeper.params.features == "16,32" and mqar.tuning_axes == ["task.lr"]
    assert mad.hydra.sweeper.params.task.split(",") == MAD_TIER_TASKS
    assert [float(rate) for rate in mad.hydra.sweeper.params["task.lr"].split(",")] == BASED_FIGURE2_RATES[:3]
    assert str(mad.hydra.sweeper.params.features) == "16"


@pytest.mark.parametrize(("attention", "features", "width", "budget"), [
    ("standard", 16, 64, None), ("standard", 32, 128, None), ("mamba", 32, 64, ("d_state", 32)),
    ("nystrom", 32, 64, ("num_landmarks", 32)),
])  # fmt: skip
def test_the_tier_state_axis_is_the_budget_or_else_the_width(attention, features, width, budget):
    cfg = compose_config(["experiment=diagnostics_cpu", f"attention={attention}", f"features={features}"])
    check_config(cfg)
    assert cfg.model.dim == width
    if budget:
        assert cfg.attention[budget[0]] == budget[1]


@pytest.mark.parametrize("attention", ["standard", "nystrom", "mamba", "bigbird", "longformer"])
def test_the_cpu_tier_runs_an_entry_causal_where_it_can_and_every_task_at_64_tokens_at_most(attention):
    causal = attention_zoo.spec(attention).causal
    for task in TIER_TASKS:
        cfg = compose_config([f"experiment={tier_preset(task)}", f"attention={attention}", f"task={task}"])
        check_config(cfg)
        records = job_records(cfg)
        assert cfg.model.causal is causal and records.data.recall.training_set == "fresh"
        assert cfg.task.seq_len in (32, 63, 64)  # memorization keeps MAD's 32
        assert (cfg.model.dim, cfg.model.depth, cfg.model.num_heads) == (64, 2, 1)
        assert records.trainer.max_steps == ((1200 if causal else 3000) if task == "mqar" else 400)
        assert cfg.model.position == ("absolute" if causal else "rope")
        assert records.model.state_size <= 2 * 64 * 64  # no more than standard keeps
        assert list(cfg.tuning_axes) == ["task.lr"]


def test_the_generator_benchmark_times_the_tiers_own_shapes(capsys):
    from data_prep.recall import bench

    assert [name for name, _ in bench.TIER] == TIER_TASKS
    for name, options in bench.TIER:
        cfg = compose_config([f"experiment={tier_preset(name)}", f"task={name}"])
        assert {key: cfg.task.generator[key] for key in options} == options
    bench.main(["--tier", "--repeats", "1", "--batch", "4"])
    printed = capsys.readouterr().out
    assert all(name in printed for name in TIER_TASKS)
