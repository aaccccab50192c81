"""One job from a composed config: check, plan (fresh or resumed), build, fit, test the final weights
and the best checkpoint, write summary.json.

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
from lightning.pytorch.callbacks import ModelCheckpoint, TQDMProgressBar
from lightning.pytorch.loggers import Logger
from omegaconf import DictConfig, OmegaConf

from lra.callbacks import BestCheckpointInWindow, EfficiencyMonitor, ValidateAtLastStep
from lra.checks import check_config
from lra.data import LRADataModule
from lra.errors import ConfigError
from lra.job_end import failures_noted, record_outcome, report_completed
from lra.job_state import JobState, TrainerParts
from lra.loggers import RunIdentity, build_loggers, finish_loggers
from lra.memory import keep_freed_heap
from lra.model import LRAClassifier
from lra.module import LRALitModule
from lra.naming import attention_budget
from lra.preemption import lightning_plugins
from lra.resume import (
    CHECKPOINT_DIR,
    LAST_CHECKPOINT,
    RunPlan,
    checkpoint_step,
    job_record,
    plan_run,
    record_plan,
)
from lra.summary_json import now_iso
from lra.training_state import TrainingOrderState

log = logging.getLogger(__name__)


def build_model(cfg: DictConfig) -> LRAClassifier:
    """The shared encoder for ``cfg.task`` (``cfg.model`` its options) with the attention of
    ``cfg.attention`` in every layer; a ``ConfigError`` (one line) when an argument is invalid."""
    options = OmegaConf.to_container(cfg.model, resolve=True)
    compile_encoder = options.pop("compile")
    try:
        model = LRAClassifier(
            vocab_size=cfg.task.vocab_size,
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
    ``trainer.max_steps``, rounded down (an evaluation counts when its step is strictly after it)."""
    return int(cfg.protocol.select_after * cfg.trainer.max_steps)


def build_module(cfg: DictConfig) -> LRALitModule:
    """The LightningModule of ``cfg``: the model of ``build_model``, AdamW at ``task.lr`` with the
    ``protocol.schedule`` over ``trainer.max_steps`` steps."""
    return LRALitModule(
        build_model(cfg),
        num_classes=cfg.task.num_classes,
        lr=cfg.task.lr,
        weight_decay=cfg.task.weight_decay,
        warmup_steps=cfg.task.warmup_steps,
        max_steps=cfg.trainer.max_steps,
        schedule=cfg.protocol.schedule,
        selectable_after=selectable_after(cfg),
        attention_name=cfg.attention.name,
        finite_check_every=cfg.trainer.log_every_n_steps,
    )


def build_datamodule(cfg: DictConfig) -> LRADataModule:
    task = cfg.task
    return LRADataModule(
        root=Path(cfg.data_root).resolve(),
        dataset=task.dataset,
        batch_size=task.batch_size,
        expected={key: task[key] for key in ("seq_len", "vocab_size", "num_classes")},
        dual=task.dual,
        val_from_test=task.val_from_test,
        num_workers=cfg.num_workers,
        seed=cfg.seed,
    )


def clipping(protocol: DictConfig) -> dict[str, Any]:
    """The Trainer's gradient-clipping arguments for ``protocol.clip`` (norm, value or null)."""
    if protocol.clip is None:
        return {"gradient_clip_val": None}
    return {"gradient_clip_val": protocol.clip_value, "gradient_clip_algorithm": protocol.clip}


def build_trainer(cfg: DictConfig, output_dir: Path, loggers: list[Logger]) -> TrainerParts:
    """A Lightning Trainer from ``cfg.trainer`` that validates every ``task.eval_every`` steps and at the
    last step, clips gradients as ``cfg.protocol`` says, keeps the checkpoint of the best ``val/acc``
    within the selection window and measures the ``perf/*`` metrics.

    ``checkpoints/last.ckpt`` holds the full training state after every evaluation, and after an
    exception (Lightning's SIGTERM handling raises one at the end of the current step): what
    ``resume`` continues from. The extra callbacks of ``cfg.callbacks`` run after these.
    """
    efficiency = EfficiencyMonitor()
    checkpoint = BestCheckpointInWindow(
        dirpath=output_dir / CHECKPOINT_DIR,
        filename="best",
        monitor="val/acc",
        mode="max",
        save_top_k=1,
        auto_insert_metric_name=False,
    )
    last_state = ModelCheckpoint(  # after ``checkpoint``, so that it saves that callback's updated state
        dirpath=output_dir / CHECKPOINT_DIR,
        filename=LAST_CHECKPOINT,
        monitor=None,
        save_top_k=1,
        save_on_exception=True,
        enable_version_counter=False,
    )
    extra = [instantiate(node) for node in cfg.callbacks.values()]
    # The bar reads the logged loss back from the device: only every log_every_n_steps steps.
    refresh = cfg.trainer.log_every_n_steps
    progress = [TQDMProgressBar(refresh_rate=refresh)] if cfg.trainer.enable_progress_bar else []
    trainer = L.Trainer(
        **OmegaConf.to_container(cfg.trainer, resolve=True),
        **clipping(cfg.protocol),
        val_check_interval=cfg.task.eval_every,
        check_val_every_n_epoch=None,
        callbacks=[
            efficiency,
            TrainingOrderState(),
            checkpoint,
            last_state,
            ValidateAtLastStep(),
            *progress,
            *extra,
        ],
        logger=loggers or False,
        plugins=lightning_plugins(),
        default_root_dir=output_dir,
    )
    return TrainerParts(trainer, efficiency, checkpoint)


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
    """Build the run, fit it as ``plan`` says (afresh or from its checkpoint, in its folder) and test it;
    ``state`` holds what was built, so that a failure is recorded with it."""
    state.run_dir, state.resumed_from = plan.directory, plan.checkpoint
    resumed_step = None if plan.checkpoint is None else checkpoint_step(plan.checkpoint)
    if cfg.threads is not None:
        torch.set_num_threads(cfg.threads)
    if cfg.steady_heap and not keep_freed_heap():
        log.info("steady_heap: this C library is not glibc; its malloc keeps its own settings")
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    module = build_module(cfg)  # a bad model or attention option stops here, before any data work
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
    )
    state.loggers = build_loggers(
        cfg.logger, run_identity, plan.directory, OmegaConf.to_container(cfg, resolve=True), resumed_step
    )
    parts = state.parts = build_trainer(cfg, plan.directory, state.loggers)
    parts.trainer.fit(module, datamodule=datamodule, ckpt_path=plan.checkpoint)
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
        plan = plan_run(cfg, output_dir, resume_roots, job_overrides)
        if rank_zero_only.rank == 0:
            record_plan(plan, cfg, output_dir, job, job_overrides)
    if plan is not None and plan.completed:
        return report_completed(plan.directory)  # its summary.json stays as it is
    try:
        if plan is not None:
            with failures_noted(state):
                train_and_test(cfg, plan, job, state)
    finally:
        finish_loggers(state.loggers)
        summary = record_outcome(cfg, job, state)
    return summary
