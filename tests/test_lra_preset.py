"""experiment=lra: the LRA paper's protocol (google-research/long-range-arena) element by element.

The JAX/Flax code cannot run here, so the model is checked against the parameter count of the official
modules, the schedules against the code's factors restated, and the optimiser against Flax's Adam update
restated; then the preset trains on the tiny sets.
"""

from __future__ import annotations

import pytest
import torch
from conftest import compose_config, smoke_overrides
from helpers.lra_step import FLAX_ADAM, FlaxAdam, lra_rate
from helpers.records import model_of
from omegaconf import OmegaConf

from lra.config.errors import ConfigError
from lra.job.checks import check_config
from lra.job.train import run
from lra.model.module import adamw_with_schedule
from lra.report.runs import protocol_label
from lra.results.summary_json import protocol_record

# The official sizes (emb_dim, qkv_dim, mlp_dim, num_layers, CLS token, learned positions, dual), from
# lra_benchmarks/<task>/configs/base_*_config.py with transformer_base.py, and the defaults of
# models/transformer/transformer.py where <task>/train.py passes nothing.
OFFICIAL = {
    "listops": (512, 512, 1024, 4, True, False, False),  # listops/configs/base_listops_config.py
    "text": (256, 256, 1024, 4, True, False, False),  # text_classification/configs/base_tc_config.py
    "retrieval": (128, 128, 512, 4, False, False, True),  # matching/configs/base_match_config.py
    "image": (128, 64, 128, 1, True, True, False),  # image/configs/cifar10/transformer_base.py
    "pathfinder": (32, 16, 32, 4, False, False, False),  # image/configs/pathfinder32/transformer_base.py
    "pathx": (32, 16, 32, 1, False, True, False),  # image/configs/pathfinder128/base_pathfinder128_config.py
}


def official_parameters(sizes: tuple, vocab: int, max_len: int, classes: int) -> int:
    """The parameters of models/transformer/transformer.py's TransformerEncoder (TransformerDualEncoder for
    Retrieval) with the head of models/layers/common_layers.py, for the harness's vocabulary and length;
    ``sizes`` as ``OFFICIAL``'s."""
    emb, qkv, mlp, layers, cls, learned, dual = sizes
    embedding = vocab * emb  # nn.Embed(num_embeddings=vocab_size, features=emb_dim)
    cls_token = emb if cls else 0  # self.param('cls', (1, 1, emb_dim))
    positions = (max_len + cls) * emb if learned else 0  # AddPositionEmbs: a parameter only when learned
    attention = 4 * emb * qkv  # SelfAttention(qkv_features=qkv_dim, bias=False): query, key, value, out
    mlp_block = emb * mlp + mlp + mlp * emb + emb  # common_layers.MlpBlock: Dense(mlp_dim), Dense(emb_dim)
    block = 2 * emb + attention + 2 * emb + mlp_block  # two LayerNorms (scale, bias) around them
    encoder = embedding + cls_token + positions + layers * block + 2 * emb  # encoder_norm
    if (
        dual
    ):  # classifier_head_dual, no interaction: [u, v] -> Dense(mlp) -> Dense(mlp // 2) -> Dense(classes)
        half = mlp // 2
        head = 2 * emb * mlp + mlp + mlp * half + half + half * classes + classes
    else:  # classifier_head: Dense(mlp_dim) -> Dense(num_classes)
        head = emb * mlp + mlp + mlp * classes + classes
    return encoder + head


@pytest.mark.parametrize("task", list(OFFICIAL))
def test_the_transformer_has_the_official_parameter_count(task):
    cfg = compose_config(["experiment=lra", f"task={task}", "attention=standard"])
    check_config(cfg)
    model = model_of(cfg)
    task_shape = (cfg.task.vocab_size, cfg.task.seq_len, cfg.task.num_classes)
    assert sum(p.numel() for p in model.parameters()) == official_parameters(OFFICIAL[task], *task_shape)


@pytest.mark.parametrize(
    ("task", "attention", "sizes"),
    [
        ("pathfinder", "bigbird", (64, 32, 64, 4, False, False, False)),  # pathfinder32/bigbird_base.py
        ("pathfinder", "longformer", (32, 16, 32, 2, False, False, False)),  # pathfinder32/longformer_base.py
        ("image", "longformer", (128, 64, 128, 4, False, True, False)),  # cifar10/longformer_base.py: MEAN
    ],
)
def test_attentions_with_their_own_sizes_have_the_official_parameter_count(task, attention, sizes):
    """Attentions without parameters of their own, sized by their <attention>_base.py."""
    cfg = compose_config(["experiment=lra", f"task={task}", f"attention={attention}"])
    model = model_of(cfg)
    task_shape = (cfg.task.vocab_size, cfg.task.seq_len, cfg.task.num_classes)
    assert sum(p.numel() for p in model.parameters()) == official_parameters(sizes, *task_shape)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("model.pooling=sum", r"^model.pooling='sum' is invalid: it must be one of mean, first, max$"),
        ("model.dual_features=sum", r"^model.dual_features='sum' is invalid: it must be one of nli, concat$"),
        (
            "model.classifier_dim=[512,0]",
            r"^model.classifier_dim=\[512, 0\] is invalid: it must be an integer",
        ),
        ("protocol.adam_betas=[0.9]", r"^protocol.adam_betas=\[0.9\] is invalid: it must be two numbers in"),
        ("protocol.tested=last", r"^protocol.tested='last' is invalid: it must be one of best, final$"),
        (
            "model.qkv_dim=100",
            r"^cannot build the model: model.qkv_dim=100 must be a multiple of model.num_heads=8$",
        ),
    ],
)
def test_bad_lra_options_are_one_line(override, message):
    cfg = compose_config(["experiment=lra", "task=listops", "attention=standard", override])
    with pytest.raises(ConfigError, match=message):
        check_config(cfg)
        model_of(cfg)


def learning_rates(task: str, steps: list[int]) -> list[float]:
    """The harness's rate at each of ``steps`` under experiment=lra for ``task``."""
    cfg = compose_config(["experiment=lra", f"task={task}", "attention=standard"])
    param = torch.nn.Parameter(torch.zeros(1))
    parts = adamw_with_schedule(
        torch.nn.ParameterList([param]),
        cfg.task.lr,
        cfg.task.weight_decay,
        cfg.protocol.schedule,
        cfg.task.warmup_steps,
        cfg.trainer.max_steps,
    )
    optimizer, scheduler = parts["optimizer"], parts["lr_scheduler"]["scheduler"]
    rates, step = [], 0
    for target in steps:
        while step < target:
            optimizer.step()
            scheduler.step()
            step += 1
        rates.append(optimizer.param_groups[0]["lr"])
    return rates


@pytest.mark.parametrize(
    ("task", "factors", "base", "warmup", "cycle", "steps"),
    [
        ("listops", "rsqrt_decay", 0.05, 1000, 0, [0, 1, 500, 999, 1000, 1001, 4000]),
        ("text", "rsqrt_decay", 0.05, 8000, 0, [0, 4000, 8000, 19999]),
        ("retrieval", "rsqrt_decay", 0.05, 8000, 0, [0, 2500, 4999]),
        ("image", "cosine_decay", 5e-4, 175, 35000, [0, 100, 175, 17675, 34999]),
    ],
)
def test_the_schedule_is_the_lra_factors(task, factors, base, warmup, cycle, steps):
    expected = [lra_rate(factors, step, base, warmup, cycle) for step in steps]
    assert learning_rates(task, steps) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_the_schedules_at_named_steps():
    """The first step's rate is 0 (Flax counts from 0); ListOps peaks at 0.05/√1000; Image is at half its
    rate halfway through the cycle after the warm-up."""
    assert learning_rates("listops", [0, 1000])[0] == 0.0
    assert learning_rates("listops", [1000])[0] == pytest.approx(1.5811388e-3)
    assert learning_rates("image", [175 + 17500])[0] == pytest.approx(2.5e-4)


def test_adamw_is_flax_adam_with_its_weight_decay():
    """flax/optim/adam.py (removed in flax 0.6.0): p -= lr·m̂/(√v̂ + eps), then p -= lr·weight_decay·p,
    both with the scheduled lr: decoupled from the moments, and scaled by the schedule, as AdamW's."""
    torch.manual_seed(0)
    start = torch.randn(5, dtype=torch.float64)
    grads = [torch.randn(5, dtype=torch.float64) for _ in range(6)]
    rates = [0.0, 1e-3, 2e-3, 1.5e-3, 1e-3, 5e-4]
    beta1, beta2, eps, decay = FLAX_ADAM["beta1"], FLAX_ADAM["beta2"], FLAX_ADAM["eps"], 0.1
    flax = torch.nn.Parameter(start.clone())
    flax_adam = FlaxAdam([flax], decay)
    param = torch.nn.Parameter(start.clone())
    optimizer = torch.optim.AdamW([param], lr=1.0, betas=(beta1, beta2), eps=eps, weight_decay=decay)
    for grad, lr in zip(grads, rates, strict=True):
        flax.grad = grad
        flax_adam.apply_gradient(lr)
        optimizer.param_groups[0]["lr"] = lr
        param.grad = grad
        optimizer.step()
    torch.testing.assert_close(param.detach(), flax.detach(), rtol=1e-12, atol=1e-15)


def test_the_preset_states_the_shared_elements():
    cfg = compose_config(["experiment=lra", "task=text", "attention=standard"])
    assert OmegaConf.to_container(cfg.protocol, resolve=True) == {
        "schedule": "warmup_rsqrt",
        "clip": None,
        "clip_value": 1.0,
        "select_after": 0.0,
        "tested": "final",
        "adam_betas": [0.9, 0.98],
        "adam_eps": 1e-9,
        "schedule_steps": None,
        "attention_dropout": 0.1,
    }
    assert (cfg.task.batch_size, cfg.task.weight_decay, cfg.task.val_from_test) == (32, 0.1, True)
    assert (cfg.trainer.max_steps, cfg.trainer.precision, cfg.task.eval_every) == (20000, "32-true", 100)
    pathx = compose_config(["experiment=lra", "task=pathx", "attention=standard"])
    assert (pathx.protocol.clip, pathx.protocol.clip_value, pathx.trainer.max_steps) == ("norm", 1.0, 500000)


def test_the_attentions_take_the_lra_codes_settings():
    linformer = compose_config(["experiment=lra", "task=text", "attention=linformer"]).attention
    assert (linformer.proj_dim, linformer.share_kv, linformer.per_head) == (16, True, False)
    reformer = compose_config(["experiment=lra", "task=text", "attention=reformer"]).attention
    assert (reformer.n_hashes, reformer.chunk_size) == (1, 10)
    assert (
        compose_config(["experiment=lra", "task=listops", "attention=performer"]).attention.num_features == 2
    )
    assert (
        compose_config(["experiment=lra", "task=text", "attention=performer"]).attention.num_features == 256
    )
    image = compose_config(["experiment=lra", "task=image", "attention=longformer"]).model
    assert (image.depth, image.dim, image.num_heads, image.pooling) == (4, 128, 4, "mean")
    explicit = compose_config(["experiment=lra", "task=image", "attention=longformer", "model.depth=2"])
    assert explicit.model.depth == 2  # the command line still wins


@pytest.mark.slow
@pytest.mark.parametrize("task", ["listops", "retrieval", "image"])
def test_the_preset_trains_and_tests_the_final_weights(data_root, tmp_path, task):
    overrides = smoke_overrides(data_root, task, "standard", "experiment=lra", "trainer.max_steps=20")
    cfg = compose_config([*overrides, "task.eval_every=10", "task.warmup_steps=5"])
    summary = run(cfg, tmp_path)
    assert summary["status"] == "completed", summary["error"]
    metrics = summary["metrics"]
    assert metrics["train/steps"] == 20
    assert metrics["test/acc"] == metrics["test/acc_final"]  # protocol.tested=final


def test_a_run_that_tests_its_final_weights_says_so_in_summary_and_report():
    config = OmegaConf.to_container(
        compose_config(["experiment=lra", "task=image", "attention=standard"]), resolve=True
    )
    protocol = protocol_record(config)
    assert (protocol["schedule"], protocol["tested"]) == ("warmup_cosine", "final")
    assert protocol_label(protocol) == "warmup_cosine, no clipping, final weights"
    assert protocol_record(OmegaConf.to_container(compose_config([]), resolve=True))["tested"] == "best"
