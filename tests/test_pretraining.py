"""Self-pretraining (``pretrain=masked``; lra.model.pretraining, lra.job.pretrain_stage): what is masked and
scored, every attention through both stages, labels kept out, the weights fine-tuning starts from,
``pretrain.from``, the share of one budget, resume of either stage bit for bit, DDP, one-line errors.

The runs train the tiny sets of ``conftest.py`` in this process (``lra.job.train.run``), as the other
harness tests do; the resumed ones and DDP are marked slow.
"""

from __future__ import annotations

import json
from pathlib import Path

import lightning as L
import numpy as np
import pytest
import torch
from conftest import compose_config, smoke_overrides, task_attention_product
from helpers.records import model_of
from test_harness import NO_OPTIONS, NaNAttention
from test_harness_cli import lra_command
from test_resume import checkpoint, csv_rows, signal_at
from torch import nn

import attention_zoo
from attention_zoo import registry
from data_prep import PreparedSet, PreparedWriter
from lra.config.errors import ConfigError
from lra.config.naming import SWEPT_KEYS_ENV, job_name, record_swept_keys
from lra.job.checkpoint_files import WEIGHTS_FILE
from lra.job.checks import check_config
from lra.job.job_end import SIGTERM_EXIT_STATUS
from lra.job.loggers import PRETRAIN_METRICS, PRETRAIN_STEP, RunIdentity, build_wandb
from lra.job.pretrain_stage import save_weights, unwrapped
from lra.job.resolve import comparable_config, encoder_identity
from lra.job.train import run
from lra.model.encoder import padding_mask
from lra.model.pretraining import MaskedPretrainModule, choose_masked
from lra.results.summary_tables import format_table


def spt_config(
    data_root: Path, *extra: str, task: str = "listops", attention: str = "standard", steps: int = 2
):
    """A fast dev run of ``task`` × ``attention`` with ``pretrain=masked``: ``steps`` steps in each stage."""
    stages = ["pretrain=masked", f"pretrain.steps={steps}", f"trainer.max_steps={steps}"]
    return compose_config(smoke_overrides(data_root, task, attention, *stages, *extra))


def weights_of(run_dir: Path) -> dict[str, torch.Tensor]:
    return torch.load(run_dir / "checkpoints" / WEIGHTS_FILE, weights_only=True)["encoder"]


def assert_same_tensors(first: dict[str, torch.Tensor], second: dict[str, torch.Tensor]) -> None:
    assert first.keys() == second.keys()
    assert all(torch.equal(first[key], second[key]) for key in first), "tensors differ"


class RecordingEncoder(nn.Module):
    """Token states that are one parameter (3, 12, 8), whatever the input; it keeps the inputs it saw."""

    def __init__(self) -> None:
        super().__init__()
        self.states = nn.Parameter(torch.randn(3, 12, 8))
        self.inputs: list[torch.Tensor] = []

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        self.inputs.append(tokens.clone())
        return self.states


def recording_module(loss: str = "ce", mask_prob: float = 0.5) -> MaskedPretrainModule:
    return MaskedPretrainModule(
        RecordingEncoder(),
        dim=8,
        vocab_size=256,
        mask_prob=mask_prob,
        loss=loss,
        lr=1e-3,
        weight_decay=0.0,
        warmup_steps=0,
        max_steps=1,
        val_seed=0,
        attention_name="standard",
    )


def test_masks_fall_on_real_tokens_alone_at_the_given_rate():
    real = padding_mask(torch.tensor([0, 7, 2000, 4000]), 4000)
    torch.manual_seed(0)
    chosen = choose_masked(real, 0.3)
    assert not chosen[~real].any()
    assert abs(float(chosen.sum() / real.sum()) - 0.3) < 0.02  # 6,007 real tokens: 3.4 standard errors
    assert (
        not choose_masked(real, 0.999)[~real].any() and choose_masked(real, 0.999)[real].float().mean() > 0.99
    )


@pytest.mark.parametrize("loss", ["ce", "l1"])
def test_only_masked_positions_are_scored_and_padding_is_never_masked(loss):
    module = recording_module(loss, mask_prob=0.5)
    tokens = torch.randint(1, 256, (3, 12))
    lengths = torch.tensor([12, 5, 1])
    tokens[padding_mask(lengths, 12).logical_not()] = 0
    torch.manual_seed(3)
    module.training_step((tokens, lengths), 0).backward()
    (seen,) = module.encoder.inputs
    chosen = seen == module.mask_id
    assert chosen.any() and not chosen[~padding_mask(lengths, 12)].any()  # padding is never masked
    assert torch.equal(seen[~chosen], tokens[~chosen])  # every other token goes in as it was
    scored = module.encoder.states.grad.abs().sum(dim=-1) > 0  # (3, 12): the positions the loss reads
    assert torch.equal(scored, chosen)


def test_the_validation_masks_are_the_same_at_every_evaluation():
    module = recording_module()
    batch = (torch.randint(1, 256, (3, 12)), torch.tensor([12, 9, 4]))
    for _ in range(2):
        module.on_validation_epoch_start()
        module.validation_step(batch, 0)
        torch.rand(5)  # the global RNG moves on between evaluations: the masks do not follow it
    first, second = module.encoder.inputs
    assert torch.equal(first, second) and (first == module.mask_id).any()


@pytest.mark.parametrize(  # two documents per example; pixels
    ("task", "attention"), task_attention_product(("retrieval", "pathfinder"), attention_zoo.available())
)
def test_every_attention_pretrains_then_fine_tunes(data_root, tmp_path, task, attention):
    cfg = spt_config(data_root, task=task, attention=attention, steps=1)
    summary = run(cfg, tmp_path)
    assert summary["status"] == "completed", summary["error"]
    assert summary["pretrain"]["steps"] == 1 and summary["metrics"]["train/steps"] == 1
    L.seed_everything(cfg.seed, verbose=False)  # the encoder the run started from
    initial = model_of(cfg).encoder
    pretrained = weights_of(tmp_path)
    unchanged = [name for name, value in initial.named_parameters() if torch.equal(value, pretrained[name])]
    assert not unchanged
    assert pretrained["token_embedding.weight"].shape[0] == cfg.task.vocab_size + 1  # and [MASK]


def test_pixels_scored_with_l1_have_a_head_of_one_value(data_root, tmp_path):
    summary = run(spt_config(data_root, "pretrain.loss=l1", task="image"), tmp_path)
    assert summary["status"] == "completed", summary["error"]
    assert summary["pretrain"]["loss"] == "l1" and 0 <= summary["pretrain"]["masked_acc"] <= 1
    head = checkpoint(tmp_path / "checkpoints" / "pretrain-best.ckpt")["state_dict"]["objective.head.weight"]
    assert head.shape == (1, 64)


def write_shuffled_labels(data_root: Path, root: Path) -> None:
    """The tiny ListOps set of ``data_root`` under ``root`` with its labels permuted, inputs the same."""
    prepared = PreparedSet("listops", data_root)
    rng = np.random.default_rng(1)
    with PreparedWriter(root, "listops", dict(prepared.meta)) as writer:
        for name, count in prepared.counts.items():
            split = prepared.split(name)
            arrays = writer.create_split(name, count, split.tokens.shape[1:], prepared.meta["vocab_size"])
            arrays.tokens[:], arrays.lengths[:] = split.tokens, split.lengths
            arrays.labels[:] = rng.permutation(np.asarray(split.labels))
            assert not np.array_equal(arrays.labels, split.labels)


def test_labels_never_reach_pretraining(data_root, tmp_path):
    write_shuffled_labels(data_root, tmp_path / "shuffled")
    summaries = {
        name: run(spt_config(root, steps=4), tmp_path / name)
        for name, root in (("labels", data_root), ("shuffled", tmp_path / "shuffled"))
    }
    assert_same_tensors(weights_of(tmp_path / "labels"), weights_of(tmp_path / "shuffled"))
    assert summaries["labels"]["pretrain"]["masked_acc"] == summaries["shuffled"]["pretrain"]["masked_acc"]


def encoder_at_start(path: Path) -> list[str]:
    """Overrides that save the encoder's weights to ``path`` as fine-tuning starts."""
    return [
        "+callbacks.start._target_=helpers.encoder_at_start.EncoderAtStart",
        f"+callbacks.start.path={path}",
    ]


def test_fine_tuning_starts_from_the_pretrained_weights_and_pretrain_from_shares_them(data_root, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    pretrained = run(spt_config(data_root, *encoder_at_start(tmp_path / "first.pt"), steps=4), first)
    assert pretrained["status"] == "completed", pretrained["error"]
    assert_same_tensors(torch.load(tmp_path / "first.pt"), weights_of(first))

    reused = run(
        spt_config(data_root, *encoder_at_start(tmp_path / "second.pt"), f"pretrain.from={first}", steps=4),
        second,
    )
    assert reused["status"] == "completed", reused["error"]
    assert_same_tensors(torch.load(tmp_path / "second.pt"), weights_of(first))
    assert not (second / "checkpoints" / "pretrain-last.ckpt").exists()  # nothing pretrained in that job
    assert reused["pretrain"] == {**pretrained["pretrain"], "from": str(first / "checkpoints" / WEIGHTS_FILE)}
    # Fine-tuning draws from the seed afresh: the same numbers whichever job pretrained its weights.
    for key in ("val/acc_best", "test/acc", "test/loss", "val/pretrain_acc", "pretrain/steps"):
        assert reused["metrics"][key] == pretrained["metrics"][key], key
    final = [checkpoint(folder / "checkpoints" / "last.ckpt")["state_dict"] for folder in (first, second)]
    assert_same_tensors(*final)
    spt_column = [line.split()[2] for line in format_table([pretrained, reused]).splitlines()[2:]]
    assert spt_column == ["masked", "masked"] and "masked (from)" in format_table([reused])


def test_a_share_of_the_budget_goes_to_pretraining_and_fine_tuning_keeps_the_rest(data_root, tmp_path):
    summary = run(
        spt_config(data_root, "pretrain.share=0.4", "trainer.max_steps=5", "task.warmup_steps=1"), tmp_path
    )
    assert summary["status"] == "completed", summary["error"]
    assert (summary["pretrain"]["steps"], summary["metrics"]["train/steps"]) == (2, 3)
    state = checkpoint(tmp_path / "checkpoints" / "last.ckpt")
    schedule = state["lr_schedulers"][0]
    assert schedule["last_epoch"] == 3 and schedule["_last_lr"] == [0.0]  # decayed to 0 at fine-tuning's end
    assert [step for step, _ in csv_rows(tmp_path, "val/acc")] == [
        2
    ]  # fine-tuning validates at its last step
    assert summary["config"]["trainer"]["max_steps"] == 5  # the config as given: the whole budget


def test_a_non_finite_pretraining_loss_stops_the_run_and_names_pretrain_lr(data_root, tmp_path, monkeypatch):
    spec = registry.AttentionSpec("nan-test", NaNAttention, {}, {}, None, None)
    monkeypatch.setitem(registry._REGISTRY, "nan-test", spec)
    summary = run(spt_config(data_root, "attention.name=nan-test", *NO_OPTIONS), tmp_path)
    assert summary["status"] == "nan" and summary["pretrain"]["steps"] == 0
    assert summary["error"].startswith("pretraining loss is not finite (NaN or inf) at step 0")
    assert "lower pretrain.lr" in summary["error"] and not (tmp_path / "checkpoints" / WEIGHTS_FILE).exists()


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("pretrain.mask_prob=0", r"^pretrain.mask_prob=0 is invalid: it must be a number in \(0, 1\)$"),
        ("pretrain.mask_prob=1", r"^pretrain.mask_prob=1 is invalid: it must be a number in \(0, 1\)$"),
        ("pretrain.steps=0", r"^pretrain.steps=0 is invalid: it must be an integer >= 1$"),
        ("pretrain.share=0", r"^pretrain.share=0 is invalid: it must be a number in \(0, 1\) or null$"),
        ("pretrain.share=1.5", r"^pretrain.share=1.5 is invalid: it must be a number in \(0, 1\) or null$"),
        (
            "pretrain.share=0.1",
            r"^pretrain.share=0.1 of trainer.max_steps=2 leaves 0 pretraining and 2 fine-",
        ),
        ("pretrain.loss=mse", r"^pretrain.loss='mse' is invalid: it must be one of ce, l1$"),
        ("pretrain.from=/no/such/run", r"^pretrain.from=/no/such/run: does not exist; give a run folder"),
    ],
)
def test_bad_pretraining_settings_are_one_line(override, message):
    with pytest.raises(ConfigError, match=message):
        check_config(compose_config(["pretrain=masked", "trainer.max_steps=2", override]))


def test_pretrain_from_a_folder_without_weights_is_refused(tmp_path):
    with pytest.raises(
        ConfigError, match=r"^pretrain.from=.*: no checkpoints/pretrained.pt in that folder; "
    ):
        check_config(compose_config(["pretrain=masked", f"pretrain.from={tmp_path}"]))


@pytest.mark.parametrize(
    ("overrides", "meta", "message"),
    [
        (["task=text"], {}, "the weights were pretrained with task='listops', this run has task='text'"),
        (["attention=nystrom"], {}, "the weights were pretrained with attention={'_target_'"),
        (
            [],
            {"vocab_size": 18},
            "the weights were pretrained with vocab_size=18, this run has vocab_size=17",
        ),
        (
            ["model.dim=32"],
            {},
            "do not fit this model (token_embedding.weight: (17, 64) there, (17, 32) here)",
        ),
    ],
)
def test_incompatible_weights_are_refused_in_one_line_before_training(
    data_root, tmp_path, overrides, meta, message
):
    """Weights written as the stage writes them, for ListOps with standard attention."""
    made_for = spt_config(data_root)
    weights = unwrapped(model_of(made_for).encoder).state_dict()
    path = tmp_path / WEIGHTS_FILE
    save_weights(path, weights, {**encoder_identity(made_for), **meta})
    summary = run(spt_config(data_root, f"pretrain.from={path}", *overrides), tmp_path / "run")
    assert summary["status"] == "failed" and message in summary["error"] and "\n" not in summary["error"]
    assert summary["metrics"]["train/steps"] is None
    not_weights = tmp_path / "notes.txt"
    not_weights.write_text("not weights")
    summary = run(spt_config(data_root, f"pretrain.from={not_weights}"), tmp_path / "other")
    assert "not a pretrained weights file" in summary["error"]


@pytest.mark.parametrize(
    ("task", "mask_prob", "lr", "loss"),
    [
        ("listops", 0.10, 1e-3, "ce"),
        ("text", 0.15, 5e-4, "ce"),
        ("retrieval", 0.15, 5e-3, "ce"),
        ("image", 0.50, 1e-3, "l1"),
        ("pathfinder", 0.50, 1e-3, "ce"),
        ("pathx", 0.50, 5e-4, "ce"),
    ],
)
def test_each_task_pretrains_with_the_authors_settings(task, mask_prob, lr, loss):
    pretrain = compose_config([f"task={task}", "pretrain=masked"]).pretrain
    assert (pretrain.mask_prob, pretrain.lr, pretrain.loss) == (mask_prob, lr, loss)


def test_a_run_from_scratch_is_the_same_job_as_a_config_without_pretrain():
    scratch = comparable_config(compose_config([]))
    assert "pretrain" not in scratch
    assert comparable_config(compose_config(["pretrain=masked"]))["pretrain"]["mode"] == "masked"


def test_a_sweep_over_pretrain_names_its_runs_with_it(monkeypatch):
    monkeypatch.setenv(SWEPT_KEYS_ENV, "")  # restored after the test: the sweep's keys do not leak
    record_swept_keys(["pretrain=none,masked", "seed=0,1"])
    assert (
        job_name("listops", "nystrom", 1, ["pretrain=masked", "seed=1"])
        == "listops-nystrom-pretrain=masked-s1"
    )


def test_pretraining_metrics_have_their_own_wandb_step(tmp_path, monkeypatch):
    import wandb

    monkeypatch.setenv("WANDB_SILENT", "true")
    defined: dict[str, str | None] = {}
    original = wandb.sdk.wandb_run.Run.define_metric

    def record(run, name, step_metric=None, **options):
        defined[name] = step_metric
        return original(run, name, step_metric=step_metric, **options)

    monkeypatch.setattr(wandb.sdk.wandb_run.Run, "define_metric", record)
    options = compose_config(["logger=wandb", "logger.wandb.mode=offline"]).logger.wandb
    identity = RunIdentity("listops", "standard", 0, "sptaxis0", pretraining=True)
    build_wandb(options, identity, tmp_path, None)
    wandb.finish()
    assert PRETRAIN_STEP in defined and all(defined[name] == PRETRAIN_STEP for name in PRETRAIN_METRICS)
    assert "pretrain=masked" in identity.tags


def stopped_then_resumed(
    data_root: Path, tmp_path: Path, options: list[str], module: str
) -> tuple[dict, dict]:
    """An uninterrupted run, and one stopped by SIGTERM at step 6 of the stage that ``module`` trains,
    then continued with ``resume=auto``: their summaries."""
    whole = run(spt_config(data_root, *options), tmp_path / "whole")
    assert whole["status"] == "completed", whole["error"]
    stop = [*signal_at(6, "SIGTERM", tmp_path / "sent"), f"+callbacks.signal.module={module}"]
    with pytest.raises(SystemExit) as stopped:
        run(spt_config(data_root, *options, *stop), tmp_path / "parts")
    assert stopped.value.code == SIGTERM_EXIT_STATUS
    interrupted = json.loads((tmp_path / "parts" / "summary.json").read_text())
    return whole, interrupted


@pytest.mark.slow  # three short trainings of both stages per case
@pytest.mark.parametrize("module", ["MaskedPretrainModule", "LRALitModule"])
def test_resumed_in_either_stage_equals_uninterrupted_bit_for_bit(data_root, tmp_path, module):
    options = ["pretrain.steps=8", "trainer.max_steps=8", "task.eval_every=4", "model.dropout=0.2"]
    options.append("num_workers=2")  # loader workers, as the LRA tasks have
    whole, interrupted = stopped_then_resumed(data_root, tmp_path, options, module)
    parts = tmp_path / "parts"
    saved = parts / "checkpoints"
    in_pretraining = module == "MaskedPretrainModule"
    assert interrupted["status"] == "interrupted"
    assert f"SIGTERM at {'pretraining step' if in_pretraining else 'step'} 6" in interrupted["error"]
    if in_pretraining:
        assert not (saved / "last.ckpt").exists() and not (saved / WEIGHTS_FILE).exists()
        assert (
            checkpoint(saved / "pretrain-last.ckpt")["global_step"] == 6
            and interrupted["pretrain"]["steps"] == 6
        )
    else:
        assert checkpoint(saved / "last.ckpt")["global_step"] == 6
        pretraining_done = {path.name: path.stat().st_mtime_ns for path in saved.glob("pretrain*")}

    stop = [*signal_at(6, "SIGTERM", tmp_path / "sent"), f"+callbacks.signal.module={module}"]
    resumed = run(spt_config(data_root, *options, *stop, "resume=auto"), tmp_path / "job", [tmp_path])
    assert resumed["status"] == "completed" and resumed["output_dir"] == str(parts), resumed["error"]
    if not in_pretraining:  # fine-tuning went on without pretraining again
        assert {path.name: path.stat().st_mtime_ns for path in saved.glob("pretrain*")} == pretraining_done

    assert_same_tensors(weights_of(tmp_path / "whole"), weights_of(parts))
    final = [
        checkpoint(folder / "checkpoints" / "last.ckpt")["state_dict"]
        for folder in (tmp_path / "whole", parts)
    ]
    assert_same_tensors(*final)
    for column in ("pretrain/loss", "val/pretrain_acc", "train/loss", "val/acc"):
        assert csv_rows(tmp_path / "whole", column) == csv_rows(parts, column), column
    assert [step for step, _ in csv_rows(parts, "pretrain/loss")] == list(range(8))
    for key in ("val/acc_best", "test/acc", "test/loss", "val/pretrain_acc", "pretrain/steps"):
        assert whole["metrics"][key] == resumed["metrics"][key], key


@pytest.mark.slow  # python -m lra with two processes
@pytest.mark.usefixtures("one_ddp_run_at_a_time")
def test_ddp_pretrains_and_fine_tunes_with_two_cpu_processes(data_root, tmp_path):
    ddp = ["trainer=ddp", "trainer.accelerator=cpu", "trainer.devices=2", "trainer.enable_progress_bar=false"]
    steps = ["trainer.max_steps=2", "trainer.limit_val_batches=1", "trainer.limit_test_batches=1"]
    spt = ["pretrain=masked", "pretrain.steps=2"]
    args = [
        *ddp,
        *steps,
        *smoke_overrides(data_root, "listops", "standard", *spt),
        f"hydra.run.dir={tmp_path}",
    ]
    result = lra_command(args, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Starting with 2 processes" in result.stdout + result.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["config"]["trainer"]["strategy"] == "ddp"
    assert summary["pretrain"]["steps"] == 2 and summary["metrics"]["train/steps"] == 2
    assert 0 <= summary["pretrain"]["masked_acc"] <= 1 and (tmp_path / "checkpoints" / WEIGHTS_FILE).is_file()
