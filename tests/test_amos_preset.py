"""experiment=amos: every task composes with Amos et al.'s model and lengths (IdoAmos/not-from-scratch,
configs/experiment/lra/transformer-lra-*.yaml), and the encoder options it brings (max pooling, a GELU
classifier, a linear classifier, their warm-up) do what they say. tests/test_amos_parity.py checks the
training steps."""

from __future__ import annotations

import pytest
import torch
from conftest import compose_config, smoke_overrides
from helpers.records import model_of

from lra.config.errors import ConfigError
from lra.job.checks import check_config
from lra.job.train import run
from lra.model.heads import max_pool
from lra.model.schedules import build_schedule

# Their sizes per task: (d_model, n_layers, ff expand, decoder hidden width or None, retrieval's nli head).
THEIR_MODELS = {
    "listops": (512, 6, 4, None, False),  # transformer-lra-listops.yaml, decoder sequence
    "text": (512, 6, 4, 512, False),  # transformer-lra-imdb.yaml, sequence_nonelinear
    "retrieval": (128, 4, 4, 128, True),  # transformer-lra-aan.yaml, pipeline/aan.yaml retrieval
    "image": (64, 3, 2, 64, False),  # transformer-lra-cifar.yaml, sequence_nonelinear
    "pathfinder": (128, 4, 1, None, False),  # transformer-lra-pathfinder.yaml, sequence
    "pathx": (128, 4, 1, None, False),  # transformer-lra-pathx-small.yaml, sequence
}
# (train examples of the harness's split, fine-tuning batch and epochs, pretraining batch and epochs).
EPOCHS = {
    "listops": (96_000, 32, 100, 32, 100),
    "text": (22_500, 32, 65, 32, 32),
    "retrieval": (147_086, 32, 32, 32, 32),
    "image": (45_000, 50, 200, 32, 50),
    "pathfinder": (160_000, 32, 200, 32, 50),
    "pathx": (160_000, 32, 200, 32, 200),
}
# (fine-tuning lr, pretraining lr, fine-tuning warm-up, pretraining warm-up, weight decay, pooling).
RATES = {
    "listops": (1e-4, 1e-3, 2000, 2000, 0.0, "mean"),
    "text": (1e-4, 5e-4, 2000, 5000, 0.1, "mean"),
    "retrieval": (5e-4, 5e-3, 5000, 2000, 0.0, "mean"),
    "image": (1e-3, 1e-3, 2000, 2500, 0.0, "mean"),
    "pathfinder": (5e-4, 5e-4, 5000, 2500, 0.0, "mean"),
    "pathx": (5e-4, 5e-4, 5000, 5000, 0.0, "max"),
}


def amos(task: str, *extra: str):
    return compose_config(
        ["experiment=amos", f"task={task}", "attention=standard", "pretrain=masked", *extra]
    )


def their_parameters(task: str, classes: int) -> int:
    """Their model's parameters past the input encoder: per layer MultiheadAttentionFlash (four biased
    d × d maps), FF (d → expand·d → d), two LayerNorms; the final LayerNorm; the decoder."""
    d, layers, expand, hidden, nli = THEIR_MODELS[task]
    block = 4 * (d * d + d) + (d * expand * d + expand * d) + (expand * d * d + d) + 2 * 2 * d
    features = 4 * d if nli else d  # RetrievalHead(nli=True): [u, v, u*v, u-v]
    head = (
        features * classes + classes
        if hidden is None
        else features * hidden + hidden + hidden * classes + classes
    )
    return layers * block + 2 * d + head


@pytest.mark.parametrize("task", list(THEIR_MODELS))
def test_every_task_composes_with_their_model(task):
    cfg = amos(task)
    check_config(cfg)
    model = model_of(cfg)
    embedding = model.encoder.token_embedding.weight.numel()
    assert sum(p.numel() for p in model.parameters()) - embedding == their_parameters(
        task, cfg.task.num_classes
    )
    assert model.encoder.position_embedding is None and model.encoder.cls is None  # fixed sinusoids, no CLS
    finetune_lr, pretrain_lr, finetune_warmup, pretrain_warmup, decay, pooling = RATES[task]
    assert (cfg.task.lr, cfg.pretrain.lr, cfg.task.weight_decay, cfg.model.pooling) == (
        finetune_lr,
        pretrain_lr,
        decay,
        pooling,
    )
    assert (cfg.task.warmup_steps, cfg.pretrain.warmup_steps) == (finetune_warmup, pretrain_warmup)
    assert cfg.model.dropout == cfg.protocol.attention_dropout == 0.0 and cfg.protocol.clip is None
    assert cfg.protocol.schedule == cfg.pretrain.schedule == "warmup_constant_from_zero"


@pytest.mark.parametrize("task", list(EPOCHS))
def test_the_lengths_are_their_epochs(task):
    """Steps = epochs × the whole batches of the harness's training split (their loader drops the last)."""
    train, batch, epochs, pretrain_batch, pretrain_epochs = EPOCHS[task]
    cfg = amos(task)
    assert (cfg.task.batch_size, cfg.pretrain.batch_size) == (batch, pretrain_batch)
    assert cfg.trainer.max_steps == epochs * (train // batch)
    assert cfg.pretrain.steps == pretrain_epochs * (train // pretrain_batch)
    assert cfg.task.eval_every == train // batch  # one evaluation an epoch


def test_the_mask_rates_and_losses_stay_the_masked_defaults():
    assert (amos("image").pretrain.loss, amos("image").pretrain.mask_prob) == ("l1", 0.5)
    assert (amos("listops").pretrain.loss, amos("listops").pretrain.mask_prob) == ("ce", 0.1)
    assert amos("text").task.val_from_test  # their IMDB validates on test


def test_max_pooling_leaves_padding_out():
    states = torch.tensor([[[1.0, -5.0], [3.0, -2.0], [9.0, 9.0]]])  # (1, 3, 2); the last position is padding
    mask = torch.tensor([[True, True, False]])
    assert torch.equal(max_pool(states, mask), torch.tensor([[3.0, -2.0]]))


def test_the_classifier_takes_its_activation_and_may_be_linear():
    retrieval = model_of(amos("retrieval")).classifier
    assert [type(layer).__name__ for layer in retrieval] == ["Linear", "GELU", "Linear"]
    assert [type(layer).__name__ for layer in model_of(amos("listops")).classifier] == ["Linear"]
    with pytest.raises(ConfigError, match=r"^model.classifier_activation='tanh' is invalid: .*relu, gelu"):
        check_config(amos("listops", "model.classifier_activation=tanh"))
    with pytest.raises(ConfigError, match=r"^model.pooling='sum' is invalid: .*max"):
        check_config(amos("listops", "model.pooling=sum"))


def test_their_warmup_starts_at_zero():
    """transformers' get_constant_schedule_with_warmup: step / warmup below the warm-up, then 1."""
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=2.0)
    schedule = build_schedule("warmup_constant_from_zero", optimizer, 2.0, 4, 100)
    rates = []
    for _ in range(6):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    assert rates == [0.0, 0.5, 1.0, 1.5, 2.0, 2.0]


@pytest.mark.slow
def test_both_stages_train_with_their_listops_model(data_root, tmp_path):
    """The brief's command on the tiny ListOps set, at their full model size (6 × 512)."""
    overrides = smoke_overrides(
        data_root,
        "listops",
        "standard",
        "experiment=amos",
        "pretrain=masked",
        "trainer.max_steps=20",
        "pretrain.steps=20",
    )
    summary = run(compose_config(overrides), tmp_path / "run")
    assert summary["status"] == "completed", summary["error"]
    assert summary["pretrain"]["steps"] == 20 and summary["metrics"]["train/steps"] == 20


def test_the_preset_trains_from_scratch_without_pretrain_masked():
    cfg = compose_config(["experiment=amos", "task=pathx", "attention=standard"])
    check_config(cfg)
    assert cfg.pretrain.mode == "none" and cfg.model.pooling == "max" and cfg.trainer.max_steps == 1_000_000
