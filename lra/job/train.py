"""One job from a composed config: check and resolve it into its records (``lra.job.resolve``), plan (fresh
or resumed), build, self-pretrain when the config says so (``lra.job.pretrain_stage``), fit, test the final
weights and the best checkpoint, write summary.json.

``run`` is the one function here that sees the composed config. Everything a run is made of is built
here, each part from its own record (``build_model``, ``build_module``, ``build_datamodule``,
``build_trainer``), so a change to how runs are trained has one place to go.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import lightning as L
import torch
from hydra.utils import instantiate
from lightning.fabric.utilities.rank_zero import rank_zero_only
from lightning.pytorch.loggers import Logger
from omegaconf import DictConfig

from lra.config.errors import ConfigError
from lra.config.records import DataRecord, JobRecords, ModelRecord, OptimRecord, TrainerRecord
from lra.data import LRADataModule, datamodule_of
from lra.job.callbacks import BestCheckpointInWindow, EfficiencyMonitor
from lra.job.job_end import failures_noted, record_outcome, report_completed
from lra.job.job_state import JobState, TrainerParts
from lra.job.loggers import ResumePoint, RunIdentity, build_loggers, finish_loggers
from lra.job.memory import keep_freed_heap
from lra.job.pretrain_stage import prepare_encoder
from lra.job.progress_bar import FINE_TUNING, TRAINING
from lra.job.rank_plan import outlive_process_zero, shared_plan
from lra.job.resolve import job_records, summary_record
from lra.job.resume import (
    LAST_CHECKPOINT,
    RunPlan,
    checkpoint_step,
    is_pretraining_checkpoint,
    record_plan,
)
from lra.job.run_lock import RunLock
from lra.job.score_memory import warning_before_run
from lra.job.trainers import best_checkpoint, stage_trainer
from lra.model.encoder import LRAClassifier
from lra.model.module import LRALitModule
from lra.model.token_head import TokenClassifier
from lra.results.summary_json import STATE_SIZE, now_iso

log = logging.getLogger(__name__)

HEADS = {"sequence": LRAClassifier, "token": TokenClassifier}  # ModelRecord.head -> the model


def build_model(record: ModelRecord) -> LRAClassifier | TokenClassifier:
    """The shared encoder of ``record`` with its attention in every layer, under the head it names; a
    ``ConfigError`` (one line) when an argument is invalid."""
    try:
        model = HEADS[record.head](
            vocab_size=record.vocab_size,
            num_classes=record.num_classes,
            seq_len=record.seq_len,
            attention=instantiate(record.attention),
            dual=record.dual,
            **record.options,
        )
    except (TypeError, ValueError) as error:
        raise ConfigError(f"cannot build the model: {error}".splitlines()[0]) from None
    if record.compile:
        model.encoder = torch.compile(model.encoder)
    return model


def build_module(record: OptimRecord, model: LRAClassifier) -> LRALitModule:
    """The LightningModule training ``model``: AdamW at ``record.lr`` under ``record.schedule`` over
    ``record.schedule_steps`` steps."""
    return LRALitModule(
        model,
        num_classes=record.num_classes,
        lr=record.lr,
        weight_decay=record.weight_decay,
        warmup_steps=record.warmup_steps,
        max_steps=record.schedule_steps,
        schedule=record.schedule,
        selectable_after=record.selectable_after,
        attention_name=record.attention_name,
        finite_check_every=record.finite_check_every,
        betas=record.betas,
        eps=record.eps,
        token_level=record.token_level,
    )


def build_datamodule(record: DataRecord) -> LRADataModule:
    return datamodule_of(record)


def build_trainer(
    record: TrainerRecord, output_dir: Path, loggers: list[Logger], pretrained: bool = False
) -> TrainerParts:
    """The trainer of ``lra.job.trainers.stage_trainer`` for the task (fine-tuning, when ``pretrained``):
    it keeps the checkpoint of the best ``val/acc`` within the selection window, its full state in
    ``checkpoints/last.ckpt``, and measures the ``perf/*`` metrics."""
    return stage_trainer(
        record,
        output_dir,
        loggers,
        best=best_checkpoint(output_dir, "best", "val/acc", BestCheckpointInWindow),
        last_name=LAST_CHECKPOINT,
        efficiency=EfficiencyMonitor(),
        title=FINE_TUNING if pretrained else TRAINING,
    )


def tested_metrics(parts: TrainerParts, module: LRALitModule, datamodule: LRADataModule) -> dict[str, Any]:
    """Test the final weights (``test/acc_final``, ``test/loss_final``), then the selected checkpoint
    (``test/acc``, ``test/loss``); with the ``perf/*`` figures and the best validation accuracy."""
    trainer = parts.trainer
    module.testing_final_weights = True
    final = trainer.test(module, datamodule=datamodule, verbose=False)  # the weights fit left
    module.testing_final_weights = False
    selected = trainer.test(
        module, datamodule=datamodule, ckpt_path=parts.checkpoint.best_model_path, verbose=False
    )
    best = parts.checkpoint.best_model_score
    metrics: dict[str, Any] = {
        **parts.efficiency.metrics,
        "val/acc_best": None if best is None else float(best),
        "train/steps": trainer.global_step,
    }
    for results in (final, selected):  # [] when no test batch ran
        metrics.update({key: float(value) for result in results[:1] for key, value in result.items()})
    return metrics


def train_and_test(records: JobRecords, plan: RunPlan, state: JobState) -> None:
    """Build the run, self-pretrain its encoder if ``records.pretrain`` says so, fit it as ``plan`` says
    (afresh or from its checkpoint, in its folder) and test it; ``state`` holds what was built, so
    that a failure is recorded with it."""
    run = records.run
    state.run_dir, state.resumed_from = plan.directory, plan.checkpoint
    resumed = None
    if plan.checkpoint is not None:
        resumed = ResumePoint(checkpoint_step(plan.checkpoint), is_pretraining_checkpoint(plan.checkpoint))
    if run.threads is not None:
        torch.set_num_threads(run.threads)
    if run.steady_heap and not keep_freed_heap():
        log.info("steady_heap: this C library is not glibc; its malloc keeps its own settings")
    L.seed_everything(run.seed, verbose=False)
    # a bad model or attention option stops here, before any data work
    module = build_module(records.optim, build_model(records.model))
    datamodule = state.datamodule = build_datamodule(records.data)
    if rank_zero_only.rank == 0:  # a missing set is built (or reported) before any logger starts
        datamodule.prepare_data()
        datamodule.setup("fit")
    identity = RunIdentity(
        run.task, run.attention, run.seed, plan.wandb_run_id, run.job["options"], run.budget, run.masked
    )
    if rank_zero_only.rank == 0 and (
        line := warning_before_run(records.model, records.data, records.trainer)
    ):
        log.warning(line)  # a run that will not fit says so before it starts
    state.loggers = build_loggers(run.loggers, identity, plan.directory, run.hparams, resumed)
    prepare_encoder(records.pretrain, module.model.encoder, plan, state.loggers, state)
    if run.masked:  # fine-tuning draws the same however (and whether in this job) it was pretrained
        L.seed_everything(run.seed, verbose=False)
    parts = state.parts = build_trainer(records.trainer, plan.directory, state.loggers, run.masked)
    if records.model.state_size is not None:  # logged and kept with the efficiency monitor's model/*
        parts.efficiency.metrics[STATE_SIZE] = records.model.state_size
    finetuned_from = None if is_pretraining_checkpoint(plan.checkpoint) else plan.checkpoint
    parts.trainer.fit(module, datamodule=datamodule, ckpt_path=finetuned_from)
    state.metrics = tested_metrics(parts, module, datamodule)


def run(
    cfg: DictConfig, output_dir: Path, resume_roots: Sequence[Path] = (), job_overrides: Sequence[str] = ()
) -> dict[str, Any]:
    """Run one job and return its summary; the outcome is recorded, never raised (except on Ctrl+C/SIGTERM).

    Status ``completed``, ``failed`` (bad config, missing data, an error), ``nan`` (a NaN/inf loss)
    or ``interrupted`` (SIGTERM or Ctrl+C: the state is saved to ``checkpoints/last.ckpt``, then
    ``SystemExit``). ``output_dir`` is the job's folder; a resumed run (``cfg.resume``, see
    ``lra.job.resume``; ``resume_roots`` are the folders ``resume=auto`` searches) trains and writes in
    the folder it continues, and a job that already completed there is reported, not trained again.
    ``job_overrides``: the job's command-line overrides (they name it, ``lra.config.naming``). Process 0
    writes ``summary.json`` in the run's folder and prints the final table.
    """
    output_dir = Path(output_dir)
    summary_of = summary_record(cfg, job_overrides)  # names the job in summary.json whatever happens below
    state = JobState(output_dir, now_iso())
    plan: RunPlan | None = None
    with failures_noted(state):  # a job refused here (config, resume) is recorded as failed below
        records = job_records(cfg, job_overrides, summary_of.job)
        planned = shared_plan(records.run, output_dir, resume_roots)  # one plan for every DDP process
        if rank_zero_only.rank == 0:
            if not planned.completed:  # one writer per run folder: a second process stops here
                state.lock = RunLock.acquire(planned.directory)
            record_plan(planned, records.run, output_dir)
        plan = planned
    if plan is not None and plan.completed:
        return report_completed(plan.directory)  # its summary.json stays as it is
    try:
        if plan is not None:
            with failures_noted(state):
                train_and_test(records, plan, state)
    finally:
        finish_loggers(state.loggers)
        summary = record_outcome(summary_of, state)
        if state.lock is not None:
            state.lock.release()
        if state.status == "interrupted":
            outlive_process_zero()
    return summary
