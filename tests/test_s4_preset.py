"""``experiment=s4``: every task composes with the S4 repository's sizes and builds, the mixer's options
reach only ``attention=s4d``, and the encoder options it sets change nothing by default."""

from __future__ import annotations

import pytest
import torch
from conftest import TASKS, compose_config
from helpers.records import model_of, module_of

from lra.model.encoder import LRAClassifier
from lra.model.module import parameter_groups
from lra.model.norms import SequenceBatchNorm
from lra.model.schedules import build_schedule

# task: (depth, dim, prenorm, batch, lr, warm-up, steps, schedule steps, eval every, d_state, dt_lr, dropout)
S4_TASKS = {
    "listops": (6, 256, False, 32, 0.01, 12000, 120000, None, 3000, 4, 0.01, 0.0),
    "text": (6, 256, True, 16, 0.01, 5000, 49984, 50000, 1562, 4, 0.01, 0.0),
    "retrieval": (6, 256, True, 64, 0.01, 5000, 45960, 50000, 2298, 4, 0.01, 0.0),
    "image": (6, 512, False, 50, 0.01, 18000, 180000, None, 900, 64, None, 0.1),
    "pathfinder": (6, 256, True, 64, 0.004, 50000, 500000, None, 2500, 64, None, 0.0),
    "pathx": (6, 256, True, 16, 0.001, 50000, 500000, None, 10000, 64, None, 0.0),
}


@pytest.mark.parametrize("task", S4_TASKS)
def test_every_task_composes_with_their_sizes(task):
    cfg = compose_config([f"task={task}", "experiment=s4"])
    got = (cfg.model.depth, cfg.model.dim, cfg.model.prenorm, cfg.task.batch_size, cfg.task.lr)
    got += (cfg.task.warmup_steps, cfg.trainer.max_steps, cfg.protocol.schedule_steps, cfg.task.eval_every)
    got += (cfg.attention.d_state, cfg.attention.dt_lr, cfg.attention.dropout)
    assert got == S4_TASKS[task]
    assert cfg.model.mixer_dropout == cfg.attention.dropout  # both their model.dropout
    assert (cfg.attention.name, cfg.attention.lr, cfg.model.norm, cfg.model.ffn_dim) == (
        "s4d",
        0.001,
        "batch",
        0,
    )
    assert (cfg.task.weight_decay, cfg.protocol.schedule, cfg.protocol.adam_eps) == (
        0.05,
        "warmup_cosine_hf",
        1e-8,
    )
    assert cfg.attention.dt_min == (1e-4 if task == "pathx" else 1e-3)


@pytest.mark.parametrize("task", ["listops", "retrieval", "image"])
def test_the_preset_builds_their_backbone(task):
    cfg = compose_config([f"task={task}", "experiment=s4", "task.seq_len=64"])
    model = model_of(cfg)
    block = model.encoder.blocks[0]
    assert isinstance(block.attention_norm, SequenceBatchNorm) and block.ffn is None
    assert model.encoder.position_embedding is None
    assert isinstance(model.encoder.norm, SequenceBatchNorm if cfg.model.prenorm else torch.nn.Identity)
    linears = [layer for layer in model.classifier if isinstance(layer, torch.nn.Linear)]
    assert [linear.out_features for linear in linears] == ([256, 2] if task == "retrieval" else [10])
    decays = {
        tuple(sorted(g.items())) for group in parameter_groups(model) for g in [group] if g.pop("params")
    }
    assert decays == {(), (("weight_decay", 0.0),), (("lr", 0.001), ("weight_decay", 0.0))} | (
        {(("lr", 0.01), ("weight_decay", 0.0))} if cfg.attention.dt_lr else set()
    ) | ({(("lr", 0.001),)} if cfg.attention.c_lr else set())  # C: the run's weight decay


def test_the_mixer_options_reach_only_s4d():
    cfg = compose_config(["task=listops", "experiment=s4", "attention=standard", "task.seq_len=64"])
    assert "d_state" not in cfg.attention
    model_of(cfg)


@pytest.mark.parametrize("task", TASKS)
def test_the_new_options_keep_todays_encoder_by_default(task):
    """The defaults of conf/model/lra.yaml build the same parameters as before they existed."""
    cfg = compose_config([f"task={task}", "attention=standard", "task.seq_len=64"])
    model = model_of(cfg)
    names = {name for name, _ in model.named_parameters()}
    assert "encoder.position_embedding.weight" in names and "encoder.norm.weight" in names
    assert all(not hasattr(p, "_optim") for p in model.parameters())
    assert [type(layer).__name__ for layer in model.classifier] == ["Linear", "ReLU", "Linear"]


def test_bad_norm_and_activation_are_one_line():
    options = {"vocab_size": 20, "num_classes": 2, "seq_len": 8, "attention": None}
    with pytest.raises(ValueError, match="model.norm='group' is not one of layer, batch"):
        LRAClassifier(**options, norm="group")
    with pytest.raises(ValueError, match="model.classifier_activation='tanh' is not one of relu, gelu"):
        LRAClassifier(**options, classifier_activation="tanh")


def test_warmup_cosine_hf_rises_from_zero_then_falls_half_a_cosine():
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    factor = build_schedule("warmup_cosine_hf", optimizer, 1.0, 10, 110).lr_lambdas[0]
    expected = {0: 0.0, 5: 0.5, 10: 1.0, 60: 0.5, 110: 0.0}
    assert {step: pytest.approx(factor(step), abs=1e-12) for step in expected} == expected


def test_the_schedule_runs_to_schedule_steps_past_the_last_step():
    """Text trains 49,984 steps on a schedule of 50,000: the rate at the last step is not yet 0."""
    cfg = compose_config(["task=text", "experiment=s4", "task.seq_len=64", "model.depth=1"])
    module = module_of(cfg)
    factor = module.configure_optimizers()["lr_scheduler"]["scheduler"].lr_lambdas[0]
    assert module.max_steps == 50000 and factor(cfg.trainer.max_steps) > 0 == factor(50000)
