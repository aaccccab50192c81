"""The Hydra config tree: groups compose, attentions follow the registry, bad values are one clear line."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import CONF_DIR, TASKS, compose_config
from helpers.records import model_of
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

import attention_zoo
from data_prep.recipes import RECIPES
from lra.config.errors import ConfigError
from lra.job import resolvers
from lra.job.checks import KEY_TYPES, check_config
from lra.job.loggers import wandb_credentials_found
from lra.model.schedules import build_schedule

ATTENTION_FILES = sorted(path.stem for path in (CONF_DIR / "attention").glob("*.yaml"))
APPROXIMATE = [name for name in attention_zoo.available() if attention_zoo.spec(name).budget_option]


def test_one_attention_config_per_registered_core():
    assert ATTENTION_FILES == sorted(attention_zoo.available())


@pytest.mark.parametrize("name", attention_zoo.available())
def test_attention_config_states_the_registry_options_and_defaults(name):
    cfg = compose_config([f"attention={name}"])
    attention = OmegaConf.to_container(cfg.attention, resolve=True)
    assert attention.pop("_target_") == "attention_zoo.build_attention"
    assert attention.pop("_partial_") is True
    assert attention.pop("name") == name
    assert attention == attention_zoo.spec(name).options


@pytest.mark.parametrize("name", attention_zoo.available())
def test_features_budget_sizes_exactly_the_budget_option(name):
    plain = OmegaConf.to_container(compose_config([f"attention={name}"]).attention, resolve=True)
    budgeted = OmegaConf.to_container(
        compose_config([f"attention={name}", "features=96"]).attention, resolve=True
    )
    option = attention_zoo.spec(name).budget_option
    changed = {key for key in plain if plain[key] != budgeted[key]}
    assert changed == ({option} if option else set())
    if option:
        assert budgeted[option] == 96


def test_explicit_option_beats_the_budget():
    for name in ("nystrom", "skyformer"):
        cfg = compose_config([f"attention={name}", "features=128", "attention.num_landmarks=32"])
        assert cfg.attention.num_landmarks == 32


def test_the_model_passes_its_shapes_to_the_attention():
    cfg = compose_config(["task=retrieval", "attention=linformer", "model.dim=96", "model.num_heads=4"])
    core = model_of(cfg).encoder.blocks[0].attention.core
    assert core.key_proj.shape == (4000, 256) and core.scale == 24**-0.5


@pytest.mark.slow  # composes and checks a dozen configs per task
@pytest.mark.parametrize("task", TASKS)
def test_every_task_composes_with_every_attention(task):
    for name in attention_zoo.available():
        cfg = compose_config([f"task={task}", f"attention={name}", "features=16"])
        assert cfg.task.name == task and cfg.attention.name == name
        check_config(cfg)
        model_of(cfg)  # the encoder with this attention in every layer at the task's length


def test_task_defaults_follow_the_skyformer_protocol():
    expected = {  # batch, lr, warmup, eval every, seq len, classes
        "listops": (32, 1e-4, 1000, 500, 2000, 10),
        "text": (16, 1e-4, 80, 500, 4000, 2),
        "retrieval": (16, 2e-4, 800, 1000, 4000, 2),
        "image": (256, 1e-4, 175, 50, 1024, 10),
        "pathfinder": (128, 2e-4, 312, 500, 1024, 2),
    }
    for task, values in expected.items():
        t = compose_config([f"task={task}"]).task
        assert (t.batch_size, t.lr, t.warmup_steps, t.eval_every, t.seq_len, t.num_classes) == values
    assert compose_config([]).trainer.max_steps == 50000


def test_struct_mode_rejects_a_misspelt_key():
    with pytest.raises(ConfigCompositionException, match="num_landmrks"):
        compose_config(["attention.num_landmrks=32"])
    with pytest.raises(ConfigCompositionException, match="max_step"):
        compose_config(["trainer.max_step=10"])


def test_unknown_group_option_lists_the_valid_ones():
    with pytest.raises(ConfigCompositionException, match="nystrom"):
        compose_config(["attention=nystromm"])


def test_defaults_and_top_level_keys(monkeypatch):
    monkeypatch.delenv("LRA_DATA", raising=False)
    cfg = compose_config([])
    assert (cfg.task.name, cfg.attention.name, cfg.seed, cfg.features, cfg.data_root) == (
        "listops",
        "nystrom",
        0,
        None,
        "data",
    )
    assert set(cfg.logger) == {"wandb", "csv"} and cfg.logger.wandb.mode == "offline"
    monkeypatch.setenv("LRA_DATA", "/somewhere/else")
    assert compose_config([]).data_root == "/somewhere/else"


def test_logger_and_trainer_options():
    assert dict(compose_config(["logger=none"]).logger) == {}
    assert set(compose_config(["logger=csv"]).logger) == {"csv"}
    smoke = compose_config(["trainer=smoke"]).trainer
    assert (smoke.accelerator, smoke.max_steps, smoke.limit_val_batches) == ("cpu", 2, 1)
    ddp = compose_config(["trainer=ddp", "trainer.num_nodes=2"]).trainer
    assert (ddp.strategy, ddp.num_nodes) == ("ddp", 2)
    assert compose_config(["trainer=cpu"]).trainer.precision == "32-true"


def test_precision_is_bf16_on_a_gpu_and_32_bit_on_the_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)
    assert resolvers.default_precision("auto") == "bf16-mixed"
    assert resolvers.default_precision("gpu") == "bf16-mixed"
    assert resolvers.default_precision("cpu") == "32-true"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolvers.default_precision("auto") == "32-true"


def test_experiments():
    sky = compose_config(["experiment=skyformer", "attention=performer"])
    assert sky.features == 128 and sky.attention.num_features == 128 and sky.trainer.max_steps == 50000
    nys = compose_config(["experiment=nystromformer", "task=image"])
    assert (nys.task.batch_size, nys.task.eval_every, nys.trainer.max_steps) == (256, 175, 35000)
    assert compose_config(["experiment=nystromformer", "task=text"]).task.warmup_steps == 8000
    assert compose_config(["experiment=nystromformer", "task=listops", "task.lr=3e-4"]).task.lr == 3e-4
    demo = compose_config(["experiment=demo"])
    assert (demo.task.name, demo.task.dataset, demo.trainer.accelerator) == ("listops", "listops-demo", "cpu")
    (build,) = RECIPES[demo.task.dataset].builds  # the demo set's recipe matches the demo's length
    assert build.argv[0] == "listops" and build.argv[build.argv.index("--seq-len") + 1] == str(
        demo.task.seq_len
    )
    check_config(demo)
    pathfinder = compose_config(["experiment=demo_pathfinder"])
    assert (pathfinder.task.name, pathfinder.task.dataset) == ("pathfinder", "pathfinder-demo")
    (build,) = RECIPES[pathfinder.task.dataset].builds  # generated at LRA's 32×32: the task's 1024 tokens
    assert build.argv[:2] == ("pathfinder", "--generate") and "--resolution" not in build.argv
    check_config(pathfinder)


# experiment=rotary per task: their (d_model, layers, heads, feed-forward width, outputs of their head) and
# (batch, lr), from pablomiralles22/long-transformers' configs (tests/helpers/official_rotary.py: each line).
ROTARY = {"listops": ((80, 6, 4, 160, 10), (64, 1e-3)), "text": ((128, 4, 8, 256, 1), (32, 4e-3))}


@pytest.mark.parametrize("task", list(ROTARY))
def test_the_rotary_preset_builds_their_rotary_transformer(task):
    cfg = compose_config(["experiment=rotary", f"task={task}"])
    check_config(cfg)
    (dim, depth, heads, ffn, their_outputs), (batch, lr) = ROTARY[task]
    assert (cfg.attention.name, cfg.model.position, cfg.task.batch_size, cfg.task.lr) == (
        "standard",
        "rope",
        batch,
        lr,
    )
    model = model_of(cfg)
    encoder = model.encoder
    assert (len(encoder.blocks), encoder.token_embedding.embedding_dim) == (depth, dim)
    assert encoder.position_embedding is None and encoder.position_table is None and encoder.cls is not None
    # half of each head's dimensions turn, as their code turns half of each head's pairs
    rotated = {(block.attention.num_heads, block.attention.rotary.dims) for block in encoder.blocks}
    assert rotated == {(heads, dim // heads // 2)}
    # past the token embedding: their pre-LN blocks and one Linear, and what the harness adds (a final
    # LayerNorm, the CLS vector, two logits where their binary head has one)
    block = 4 * (dim * dim + dim) + (dim * ffn + ffn) + (ffn * dim + dim) + 2 * 2 * dim
    theirs = depth * block + dim * their_outputs + their_outputs
    ours = sum(p.numel() for p in model.parameters()) - encoder.token_embedding.weight.numel()
    assert ours - theirs == 2 * dim + dim + (dim + 1) * (cfg.task.num_classes - their_outputs)


def test_the_rotary_presets_warm_up_is_theirs_within_their_start_factor():
    """Their ListOps warm-up (listops_trainer.py:115, LinearLR from 1e-4 of the rate) against the preset's
    warmup_constant_from_zero: within 1e-4 of the rate at every warm-up step, the rate itself after it."""
    cfg = compose_config(["experiment=rotary", "task=listops"])
    warmup = cfg.task.warmup_steps
    parameter = torch.nn.Parameter(torch.zeros(1))
    theirs = torch.optim.AdamW([parameter], lr=1.0)
    linear = torch.optim.lr_scheduler.LinearLR(theirs, start_factor=1e-4, total_iters=warmup)
    ours = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    schedule = build_schedule(cfg.protocol.schedule, ours, 1.0, warmup, cfg.trainer.max_steps)
    for _ in range(warmup):
        assert abs(theirs.param_groups[0]["lr"] - ours.param_groups[0]["lr"]) <= 1e-4
        for stepper in (theirs, ours, linear, schedule):
            stepper.step()
    assert theirs.param_groups[0]["lr"] == pytest.approx(1.0) and ours.param_groups[0]["lr"] == 1.0


@pytest.mark.parametrize("name", attention_zoo.available())
def test_demo_runs_with_every_attention(name):
    demo = compose_config(["experiment=demo", f"attention={name}"])
    check_config(demo)
    budget = attention_zoo.spec(name).budget_option
    if budget is not None:
        assert demo.attention[budget] == demo.features


@pytest.mark.parametrize("launcher", ["local", "slurm", "joblib"])
def test_launchers_compose(launcher):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=[f"hydra/launcher={launcher}"], return_hydra_config=True)
    assert cfg.hydra.launcher._target_.rsplit(".", 1)[-1] in {
        "LocalLauncher",
        "SlurmLauncher",
        "ParallelLauncher",
    }
    assert (
        OmegaConf.to_container(cfg.hydra.sweep)["subdir"]
        == "${hydra.job.num}_${lra.job_name:${task.name},${attention.name},${seed},"
        "${hydra.overrides.task},${pretrain.mode}}"
    )


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "attention.num_landmarks=0",
            r"^attention 'nystrom': num_landmarks must be an integer >= 1, got 0$",
        ),
        ("attention.conv_kernel_size=true", r"^attention 'nystrom': conv_kernel_size must be an odd integer"),
        ("attention.num_landmarks=4096", r"^attention.num_landmarks=4096 exceeds task.seq_len=2000"),
        ("task.lr=-0.001", r"^task.lr=-0.001 is invalid: it must be a number > 0$"),
        ("task.batch_size=0", r"^task.batch_size=0 is invalid"),
        ("model.dim=65", r"^cannot build the model: model.dim=65 must be a multiple of model.num_heads=2$"),
        ("model.dropout=1.5", r"^model.dropout=1.5 is invalid"),
        ("model.position=relative", r"^model.position='relative' is invalid: it must be one of"),
        ("model.position=rope model.rope_fraction=0", r"^model.rope_fraction=0 is invalid"),
        (  # a mixer takes its positions from its own recurrence
            "attention=s4d model.position=rope",
            r"^model.position=rope: attention 's4d' does not take rotary positions: a mixer",
        ),
        (  # Performer's features of q and k are not a function of q·k
            "attention=performer model.position=rope",
            r"^model.position=rope: attention 'performer' does not take rotary positions: it is not",
        ),
        (  # the rotated dimensions come in pairs: 0.01 of 32 rotates none
            "attention=standard model.position=rope model.rope_fraction=0.01",
            r"^cannot build the model: rope_fraction=0.01 of head_dim=32 rotates no pair",
        ),
        (
            "attention.name=nope",
            r"^attention.name='nope' is not registered; valid names: .*nystrom.*standard",
        ),
        ("attention.pinv_iterations=0", r"^attention 'nystrom': "),
        ("features=-3", r"^features=-3 is invalid"),
        (
            "protocol.schedule=cosine",
            r"^protocol.schedule='cosine' is invalid: it must be one of "
            r"warmup_linear, warmup_constant, warmup_constant_from_zero, warmup_rsqrt, "
            r"warmup_cosine, one_cycle, warmup_cosine_hf$",
        ),
        ("protocol.clip=l2", r"^protocol.clip='l2' is invalid: it must be one of norm, value, null"),
        ("protocol.clip_value=-1", r"^protocol.clip_value=-1 is invalid: it must be a number > 0$"),
        (
            "protocol.attention_dropout=1.5",
            r"^protocol.attention_dropout=1.5 is invalid: it must be a number in \[0, 1\)$",
        ),
        ("protocol.select_after=1", r"^protocol.select_after=1 is invalid: it must be a number in \[0, 1\)$"),
        (
            "experiment=skyformer",  # with trainer.max_steps=50 below the listops warm-up of 1000
            r"^task.warmup_steps=1000 exceeds trainer.max_steps=50: the one_cycle schedule",
        ),
        (  # torch's OneCycleLR divides by zero at a peak on the first or the last step
            "experiment=skyformer task.warmup_steps=50",
            r"^task.warmup_steps=50 equals trainer.max_steps=50: the one_cycle schedule",
        ),
        ("experiment=skyformer task.warmup_steps=1", r"^task.warmup_steps=1 is below 2: the one_cycle"),
        ("logger.wandb.mode=sometimes", r"^logger.wandb.mode='sometimes' is invalid; valid modes"),
        ("steady_heap=2", r"^steady_heap=2 is invalid: it must be a boolean"),
    ],
)
def test_bad_values_are_one_clear_line(override, message):
    cfg = compose_config([*override.split(), "trainer.max_steps=50"])
    with pytest.raises(ConfigError, match=message) as caught:
        check_config(cfg)
        model_of(cfg)  # what only building can tell, still before any data or training
    assert "\n" not in str(caught.value)


def test_online_wandb_without_credentials_fails_at_once(monkeypatch, tmp_path: Path):
    for variable in ("WANDB_API_KEY", "WANDB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "netrc"))
    assert not wandb_credentials_found()
    with pytest.raises(ConfigError, match="wandb login"):
        check_config(compose_config(["logger.wandb.mode=online"]))
    (tmp_path / "netrc").write_text("machine api.wandb.ai\n  login user\n  password " + "x" * 40 + "\n")
    assert wandb_credentials_found()
    check_config(compose_config(["logger.wandb.mode=online"]))


def test_debug_fdr_is_a_fast_dev_run_that_composes_with_any_task():
    for task in TASKS:
        cfg = compose_config([f"task={task}", "debug=fdr"])
        trainer = cfg.trainer
        assert (trainer.max_steps, trainer.limit_val_batches, trainer.limit_test_batches) == (2, 1, 1)
        assert trainer.accelerator == "cpu" and list(cfg.logger) == ["csv"]
        assert (cfg.task.batch_size, cfg.features, cfg.num_workers) == (8, 8, 0)
    assert compose_config(["debug=fdr", "trainer=ddp"]).trainer.strategy == "ddp"  # the command line wins


PROTOCOL_DEFAULTS = {"tested": "best", "adam_betas": [0.9, 0.999], "adam_eps": 1e-6, "schedule_steps": None}


def test_paper_presets_state_the_authors_training_protocol():
    sky = compose_config(["experiment=skyformer", "task=text"])
    assert OmegaConf.to_container(sky.protocol) == dict(
        schedule="one_cycle",
        clip="value",
        clip_value=1.0,
        select_after=0.2,
        attention_dropout=0.1,
        **PROTOCOL_DEFAULTS,
    )
    assert (sky.trainer.max_steps, sky.trainer.precision, sky.features) == (50000, "32-true", 128)
    nys = compose_config(["experiment=nystromformer", "task=listops"])
    assert OmegaConf.to_container(nys.protocol) == dict(
        schedule="one_cycle",
        clip=None,
        clip_value=1.0,
        select_after=0.0,
        attention_dropout=0.1,
        **PROTOCOL_DEFAULTS,
    )
    assert (nys.trainer.max_steps, nys.trainer.precision, nys.task.warmup_steps) == (5000, "32-true", 1000)
    default = compose_config([])
    assert OmegaConf.to_container(default.protocol) == dict(
        schedule="warmup_linear",
        clip="norm",
        clip_value=1.0,
        select_after=0.0,
        attention_dropout=0.0,
        **PROTOCOL_DEFAULTS,
    )


@pytest.mark.parametrize("experiment", ["skyformer", "nystromformer"])
def test_paper_presets_set_the_authors_attention_code_only_on_the_attentions_that_have_it(experiment):
    linformer = compose_config([f"experiment={experiment}", "attention=linformer"]).attention
    assert (linformer.per_head, linformer.share_kv, linformer.init_std) == (True, True, 0.02)
    assert linformer.share_layers is (experiment == "nystromformer")
    performer = compose_config([f"experiment={experiment}", "attention=performer"]).attention
    assert (performer.temperature, performer.feature_epsilon) == ("d", 1e-4)
    for name in ("standard", "kernelized"):
        assert (
            compose_config([f"experiment={experiment}", f"attention={name}"]).attention.attention_dropout
            == 0.1
        )
    nystrom = compose_config([f"experiment={experiment}", "attention=nystrom"]).attention
    assert set(nystrom) == {
        "_target_",
        "_partial_",
        "name",
        "num_landmarks",
        "pinv_iterations",
        "conv_kernel_size",
    }
    explicit = compose_config([f"experiment={experiment}", "attention=linformer", "attention.per_head=false"])
    assert explicit.attention.per_head is False  # the command line still wins


def test_the_harness_keys_and_the_attention_options_share_one_validator():
    """protocol.attention_dropout feeds the exact cores' option of that name: one type states its rule."""
    for core in ("standard", "kernelized"):
        assert (
            KEY_TYPES["protocol.attention_dropout"]
            == attention_zoo.spec(core).option_types["attention_dropout"]
        )
