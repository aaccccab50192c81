"""One job from a composed config: check, plan (fresh or resumed), build, self-pretrain when the config
says so (``lra.pretrain_stage``), fit, test the final weights and the best checkpoint, write summary.json.

Everything a run is made of is built here (``build_model``, ``build_module``, ``build_datamodule``,
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
from omegaconf import DictConfig, OmegaConf

from lra.callbacks import BestCheckpointInWindow, EfficiencyMonitor
from lra.checks import check_config
from lra.data import LRADataModule
from lra.errors import ConfigError
from lra.job_end import failures_noted, record_outcome, report_completed
from lra.job_state import JobState, TrainerParts
from lra.loggers import ResumePoint, RunIdentity, build_loggers, finish_loggers
from lra.memory import keep_freed_heap
from lra.model import LRAClassifier
from lra.module import LRALitModule
from lra.naming import attention_budget
from lra.pretrain_stage import finetuning_config, is_masked, model_vocab_size, prepare_encoder
from lra.rank_plan import outlive_process_zero, shared_plan
from lra.resume import (
    LAST_CHECKPOINT,
    RunPlan,
    checkpoint_step,
    is_pretraining_checkpoint,
    record_plan,
)
from lra.run_identity import job_record
from lra.run_lock import RunLock
from lra.summary_json import now_iso
from lra.trainers import best_checkpoint, stage_trainer

log = logging.getLogger(__name__)


def build_model(cfg: DictConfig) -> LRAClassifier:
    """The shared encoder for ``cfg.task`` (``cfg.model`` its options; its vocabulary has [MASK] too
    when the run self-pretrains) with the attention of ``cfg.attention`` in every layer; a
    ``ConfigError`` (one line) when an argument is invalid."""
    options = OmegaConf.to_container(cfg.model, resolve=True)
    compile_encoder = options.pop("compile")
    try:
        model = LRAClassifier(
            vocab_size=model_vocab_size(cfg),
            num_classes=cfg.task.num_classes,
            seq_len=cfg.task.seq_len,
            attention=instantiate(cfg.attention),
            dual=cfg.task.dual,
            **options,
        )
    except (TypeError, ValueError) as error:
        raise ConfigError(f"cannot build the model: {error}".splitlines()[0]) from None
    if compile_encoder:
        model.encoder = torch.compile(model.encoder)
    return model


def selectable_after(cfg: DictConfig) -> int:
    """The last step whose evaluation cannot select the best checkpoint: ``protocol.select_after`` of
    ``trainer.max_steps``, rounded down (an evaluation counts when its step is strictly after it); with
    ``protocol.tested=final`` the step before the last, so that the final weights are tested."""
    if cfg.protocol.tested == "final":
        return cfg.trainer.max_steps - 1
    return int(cfg.protocol.select_after * cfg.trainer.max_steps)


def build_module(cfg: DictConfig) -> LRALitModule:
    """The LightningModule of ``cfg``: the model of ``build_model``, AdamW at ``task.lr`` (betas and eps of
    ``protocol``) with the ``protocol.schedule`` over ``protocol.schedule_steps`` (null:
    ``trainer.max_steps``) steps."""
    return LRALitModule(
        build_model(cfg),
        num_classes=cfg.task.num_classes,
        lr=cfg.task.lr,
        weight_decay=cfg.task.weight_decay,
        warmup_steps=cfg.task.warmup_steps,
        max_steps=cfg.protocol.schedule_steps or cfg.trainer.max_steps,
        schedule=cfg.protocol.schedule,
        selectable_after=selectable_after(cfg),
        attention_name=cfg.attention.name,
        finite_check_every=cfg.trainer.log_every_n_steps,
        betas=tuple(cfg.protocol.adam_betas),
        eps=cfg.protocol.adam_eps,
    )


def build_datamodule(cfg: DictConfig) -> LRADataModule:
    return LRADataModule.of_config(cfg, cfg.task.batch_size)


def build_trainer(cfg: DictConfig, output_dir: Path, loggers: list[Logger]) -> TrainerParts:
    """The fine-tuning trainer of ``lra.trainers.stage_trainer`` over ``trainer.max_steps`` steps: it
    keeps the checkpoint of the best ``val/acc`` within the selection window, its full state in
    ``checkpoints/last.ckpt``, and measures the ``perf/*`` metrics."""
    return stage_trainer(
        cfg,
        output_dir,
        loggers,
        max_steps=cfg.trainer.max_steps,
        best=best_checkpoint(output_dir, "best", "val/acc", BestCheckpointInWindow),
        last_name=LAST_CHECKPOINT,
        efficiency=EfficiencyMonitor(),
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


def train_and_test(cfg: DictConfig, plan: RunPlan, job: dict[str, Any], state: JobState) -> None:
    """Build the run, self-pretrain its encoder if ``cfg.pretrain`` says so, fit it as ``plan`` says
    (afresh or from its checkpoint, in its folder) and test it; ``state`` holds what was built, so
    that a failure is recorded with it."""
    state.run_dir, state.resumed_from = plan.directory, plan.checkpoint
    resumed = None
    if plan.checkpoint is not None:
        resumed = ResumePoint(checkpoint_step(plan.checkpoint), is_pretraining_checkpoint(plan.checkpoint))
    if cfg.threads is not None:
        torch.set_num_threads(cfg.threads)
    if cfg.steady_heap and not keep_freed_heap():
        log.info("steady_heap: this C library is not glibc; its malloc keeps its own settings")
    tuned = finetuning_config(cfg)  # trainer.max_steps: fine-tuning's steps
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    module = build_module(tuned)  # a bad model or attention option stops here, before any data work
    datamodule = state.datamodule = build_datamodule(cfg)
    if rank_zero_only.rank == 0:  # a missing set is built (or reported) before any logger starts
        datamodule.prepare_data()
        datamodule.setup("fit")
    run_identity = RunIdentity(
        cfg.task.name,
        cfg.attention.name,
        cfg.seed,
        plan.wandb_run_id,
        job["options"],
        attention_budget(cfg.attention),
        is_masked(cfg),
    )
    state.loggers = build_loggers(
        cfg.logger, run_identity, plan.directory, OmegaConf.to_container(cfg, resolve=True), resumed
    )
    prepare_encoder(cfg, module.model.encoder, plan, state.loggers, state)
    if is_masked(cfg):  # fine-tuning draws the same however (and whether in this job) it was pretrained
        L.seed_everything(cfg.seed, workers=True, verbose=False)
    parts = state.parts = build_trainer(tuned, plan.directory, state.loggers)
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
    ``lra.resume``; ``resume_roots`` are the folders ``resume=auto`` searches) trains and writes in
    the folder it continues, and a job that already completed there is reported, not trained again.
    ``job_overrides``: the job's command-line overrides (they name it, ``lra.naming``). Process 0
    writes ``summary.json`` in the run's folder and prints the final table.
    """
    output_dir = Path(output_dir)
    job = job_record(cfg, job_overrides)
    state = JobState(output_dir, now_iso())
    plan: RunPlan | None = None
    with failures_noted(state):  # a job refused here (config, resume) is recorded as failed below
        check_config(cfg)
        planned = shared_plan(cfg, output_dir, resume_roots, job_overrides)  # one plan for every DDP process
        if rank_zero_only.rank == 0:
            if not planned.completed:  # one writer per run folder: a second process stops here
                state.lock = RunLock.acquire(planned.directory)
            record_plan(planned, cfg, output_dir, job, job_overrides)
        plan = planned
    if plan is not None and plan.completed:
        return report_completed(plan.directory)  # its summary.json stays as it is
    try:
        if plan is not None:
            with failures_noted(state):
                train_and_test(cfg, plan, job, state)
    finally:
        finish_loggers(state.loggers)
        summary = record_outcome(cfg, job, state)
        if state.lock is not None:
            state.lock.release()
        if state.status == "interrupted":
            outlive_process_zero()
    return summary
