"""The one step that reads the composed config: check it (``lra.job.checks``), then resolve it, once, into
the typed records of ``lra.config.records``, one a part. Nothing below the job's entry point
(``lra.job.train.run``) sees the composed config: each builder receives its own record.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from lra.config.naming import attention_budget
from lra.config.records import (
    DataRecord,
    JobRecords,
    ModelRecord,
    OptimRecord,
    PretrainRecord,
    RecallRecord,
    RunRecord,
    SummaryRecord,
    TrainerRecord,
)
from lra.job.attention_checks import state_size
from lra.job.checks import check_config, is_masked, resolved, stage_steps, weights_file
from lra.job.run_identity import comparable, job_record
from lra.model.pretraining import MASK_TOKENS
from lra.results.summary_json import pretrain_record as summary_pretrain

TRAINING_ONLY_OPTIONS = ("attention_dropout",)  # attention options that leave the weights' meaning alone
# The sequence head's options (conf/model/), which the token head of a recall task has no use for.
SEQUENCE_HEAD_OPTIONS = ("classifier_dim", "classifier_activation", "pooling", "dual_features")


def plain_config(cfg: DictConfig) -> tuple[dict[str, Any], bool]:
    """The config as plain data, resolved where it resolves (a broken interpolation stays as written),
    and whether it resolved."""
    try:
        return OmegaConf.to_container(cfg, resolve=True), True
    except Exception:
        return OmegaConf.to_container(cfg, resolve=False), False


def comparable_config(cfg: DictConfig) -> dict[str, Any]:
    """What the job computes (``lra.job.run_identity.comparable``) of the resolved ``cfg``."""
    return comparable(OmegaConf.to_container(cfg, resolve=True))


def summary_record(cfg: DictConfig, job_overrides: Sequence[str] = ()) -> SummaryRecord:
    """What summary.json names the job by, for any outcome (a config that fails its checks too): its
    names and config, and the job (``lra.job.run_identity.job_record``)."""
    config, resolved = plain_config(cfg)
    return SummaryRecord(
        task=cfg.task.name,
        attention=cfg.attention.name,
        seed=cfg.seed,
        config=config,
        accelerator=str(cfg.trainer.accelerator),
        job=job_record(config, job_overrides, resolved),
    )


def is_recall(cfg: DictConfig) -> bool:
    """Whether the task's examples come from a recall generator (``task.generator``)."""
    return cfg.task.get("generator") is not None


def recall_record(cfg: DictConfig) -> RecallRecord | None:
    """The recall generator and its sets' sizes (None for a prepared set)."""
    if not is_recall(cfg):
        return None
    options = OmegaConf.to_container(cfg.task.generator, resolve=True)
    return RecallRecord(
        generator=options.pop("name"),
        options=options,
        train_examples=cfg.task.train_examples,
        test_examples=cfg.task.test_examples,
        training_set=cfg.task.training_set,
    )


def data_record(cfg: DictConfig, batch_size: int) -> DataRecord:
    """The task's loaders in batches of ``batch_size`` (each stage has its own)."""
    task = cfg.task
    return DataRecord(
        root=Path(cfg.data_root).resolve(),
        dataset=task.dataset,
        batch_size=batch_size,
        seq_len=task.seq_len,
        vocab_size=task.vocab_size,
        num_classes=task.num_classes,
        dual=task.dual,
        val_from_test=task.val_from_test,
        num_workers=cfg.num_workers,
        persistent_workers=cfg.persistent_workers,
        seed=cfg.seed,
        small_size=cfg.debug_data_size,
        accumulate=cfg.trainer.accumulate_grad_batches,
        recall=recall_record(cfg),
    )


def model_record(cfg: DictConfig) -> ModelRecord:
    """The encoder under its head (a recall task's: one prediction a position); its vocabulary has
    [MASK] too when the run self-pretrains."""
    options = OmegaConf.to_container(cfg.model, resolve=True)
    compile_encoder = options.pop("compile")
    head = "token" if is_recall(cfg) else "sequence"
    if head == "token":
        options = {key: value for key, value in options.items() if key not in SEQUENCE_HEAD_OPTIONS}
    return ModelRecord(
        vocab_size=cfg.task.vocab_size + (MASK_TOKENS if is_masked(cfg) else 0),
        num_classes=cfg.task.num_classes,
        seq_len=cfg.task.seq_len,
        dual=cfg.task.dual,
        attention=OmegaConf.to_container(cfg.attention, resolve=True),
        options=options,
        compile=compile_encoder,
        head=head,
        state_size=state_size(cfg),
    )


def optim_record(cfg: DictConfig, steps: int) -> OptimRecord:
    """Fine-tuning's optimisation over its ``steps``: the schedule runs ``protocol.schedule_steps`` (null:
    ``steps``); an evaluation selects the tested checkpoint when its step is strictly after
    ``protocol.select_after`` of ``steps`` (rounded down), or, with ``protocol.tested=final``, at the last."""
    protocol = cfg.protocol
    after = steps - 1 if protocol.tested == "final" else int(protocol.select_after * steps)
    return OptimRecord(
        num_classes=cfg.task.num_classes,
        lr=cfg.task.lr,
        weight_decay=cfg.task.weight_decay,
        warmup_steps=cfg.task.warmup_steps,
        schedule=protocol.schedule,
        schedule_steps=protocol.schedule_steps or steps,
        selectable_after=after,
        betas=tuple(protocol.adam_betas),
        eps=protocol.adam_eps,
        attention_name=cfg.attention.name,
        finite_check_every=cfg.trainer.log_every_n_steps,
        token_level=is_recall(cfg),
    )


def trainer_record(cfg: DictConfig, steps: int) -> TrainerRecord:
    """A stage's trainer of ``steps`` steps."""
    return TrainerRecord(
        options=OmegaConf.to_container(cfg.trainer, resolve=True),
        max_steps=steps,
        clip=cfg.protocol.clip,
        clip_value=cfg.protocol.clip_value,
        eval_every=cfg.task.eval_every,
        callbacks=OmegaConf.to_container(cfg.callbacks, resolve=True),
    )


def encoder_identity(cfg: DictConfig) -> dict[str, Any]:
    """What pretrained weights must share with the run that loads them (``lra.job.pretrain_stage``)."""
    attention = OmegaConf.to_container(cfg.attention, resolve=True)
    return {
        "task": cfg.task.name,
        "dataset": cfg.task.dataset,
        "vocab_size": model_record(cfg).vocab_size,
        "seq_len": cfg.task.seq_len,
        "attention": {key: value for key, value in attention.items() if key not in TRAINING_ONLY_OPTIONS},
    }


def pretrain_record(cfg: DictConfig) -> PretrainRecord | None:
    """``pretrain=masked``'s stage (None for a run from scratch)."""
    if not is_masked(cfg):
        return None
    settings = cfg.pretrain
    source = settings["from"]
    return PretrainRecord(
        dim=cfg.model.dim,
        vocab_size=cfg.task.vocab_size,
        mask_prob=settings.mask_prob,
        loss=settings.loss,
        lr=settings.lr,
        weight_decay=cfg.task.weight_decay,
        warmup_steps=settings.warmup_steps,
        schedule=settings.schedule,
        betas=tuple(cfg.protocol.adam_betas),
        eps=cfg.protocol.adam_eps,
        seed=cfg.seed,
        attention_name=cfg.attention.name,
        finite_check_every=cfg.trainer.log_every_n_steps,
        data=data_record(cfg, settings.batch_size),
        trainer=trainer_record(cfg, stage_steps(cfg).pretrain),
        weights_from=None if source is None else weights_file(Path(source)),
        identity=encoder_identity(cfg),
        planned=summary_pretrain(source=source, steps=0, mask_prob=settings.mask_prob, loss=settings.loss),
    )


def run_record(cfg: DictConfig, job: dict[str, Any], job_overrides: Sequence[str]) -> RunRecord:
    """The run's identity, planning and logging."""
    return RunRecord(
        task=cfg.task.name,
        attention=cfg.attention.name,
        seed=cfg.seed,
        job=job,
        comparable=comparable_config(cfg),
        overrides=tuple(job_overrides),
        resume=None if cfg.resume is None else str(cfg.resume),
        loggers=OmegaConf.to_container(cfg.logger, resolve=True),
        hparams=OmegaConf.to_container(cfg, resolve=True),
        budget=attention_budget(OmegaConf.to_container(cfg.attention, resolve=True)),
        threads=cfg.threads,
        steady_heap=cfg.steady_heap,
        masked=is_masked(cfg),
    )


def job_records(
    cfg: DictConfig, job_overrides: Sequence[str] = (), job: dict[str, Any] | None = None
) -> JobRecords:
    """Check ``cfg`` (``ConfigError``, one line, on the first problem), then resolve it into every
    part's record; ``job``: its ``lra.job.run_identity.job_record`` when the caller has it."""
    check_config(cfg)
    cfg = resolved(cfg)
    finetune = stage_steps(cfg).finetune
    return JobRecords(
        run=run_record(cfg, job or summary_record(cfg, job_overrides).job, job_overrides),
        data=data_record(cfg, cfg.task.batch_size),
        model=model_record(cfg),
        optim=optim_record(cfg, finetune),
        trainer=trainer_record(cfg, finetune),
        pretrain=pretrain_record(cfg),
    )
