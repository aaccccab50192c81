"""One job from a composed config: check, plan (fresh or resumed), build, fit, test the best checkpoint,
write summary.json.

Everything a run is made of is built here (``build_model``, ``build_module``, ``build_datamodule``,
``build_trainer``), so a change to how runs are trained has one place to go.
"""

from __future__ import annotations

import json
import signal
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning as L
import torch
from hydra.utils import instantiate
from lightning.fabric.utilities.rank_zero import rank_zero_only
from lightning.pytorch.callbacks import ModelCheckpoint, TQDMProgressBar
from lightning.pytorch.loggers import Logger
from lightning.pytorch.utilities.exceptions import SIGTERMException
from omegaconf import DictConfig, OmegaConf

from data_prep.storage import CorruptDataError
from lra.callbacks import BestCheckpointInWindow, EfficiencyMonitor, ValidateAtLastStep
from lra.checks import check_config
from lra.data import LRADataModule
from lra.errors import ConfigError
from lra.loggers import RunIdentity, build_loggers, finish_loggers
from lra.model import LRAClassifier
from lra.module import LRALitModule, NonFiniteLossError
from lra.naming import attention_budget
from lra.preemption import lightning_plugins
from lra.resume import CHECKPOINT_DIR, LAST_CHECKPOINT, checkpoint_step, job_record, plan_run, record_plan
from lra.summary import SUMMARY_FILE, format_table, make_summary, now_iso, write_summary
from lra.training_state import TrainingOrderState

# Errors whose message says all there is to say: no traceback file for these.
EXPLAINED_ERRORS = (ConfigError, FileNotFoundError, CorruptDataError, NonFiniteLossError)
# Exit status after SIGTERM, as a shell reports a process ended by it.
SIGTERM_EXIT_STATUS = 128 + signal.SIGTERM


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


@dataclass
class TrainerParts:
    trainer: L.Trainer
    efficiency: EfficiencyMonitor
    checkpoint: ModelCheckpoint


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
        selectable_after=selectable_after(cfg),
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


def device_description(trainer: L.Trainer | None, accelerator: str) -> str:
    """``cpu``, or the name of the GPU the run used (would have used, when it stopped before the trainer)."""
    if trainer is not None:
        device = trainer.strategy.root_device
        return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    on_gpu = accelerator in ("auto", "gpu", "cuda") and torch.cuda.is_available()
    return torch.cuda.get_device_name() if on_gpu else "cpu"


def final_metrics(parts: TrainerParts, test_results: list[dict[str, float]]) -> dict[str, Any]:
    best = parts.checkpoint.best_model_score
    metrics: dict[str, Any] = {
        **parts.efficiency.metrics,
        "val/acc_best": None if best is None else float(best),
        "train/steps": parts.trainer.global_step,
    }
    if test_results:
        metrics.update({key: float(value) for key, value in test_results[0].items()})
    return metrics


def report_completed(directory: Path) -> dict[str, Any]:
    """The summary of a job that already completed in ``directory`` (``resume=auto`` skips it)."""
    summary = json.loads((directory / SUMMARY_FILE).read_text())
    if rank_zero_only.rank == 0:
        print(f"\n{format_table([summary])}\nsummary: {directory / SUMMARY_FILE} (completed earlier)")
    return summary


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
    run_dir = output_dir
    job = job_record(cfg, job_overrides)
    completed_earlier: dict[str, Any] | None = None
    started = now_iso()
    status, error = "completed", None
    loggers: list[Logger] = []
    parts: TrainerParts | None = None
    datamodule: LRADataModule | None = None
    resumed_from: Path | None = None
    metrics: dict[str, Any] = {}
    try:
        check_config(cfg)
        plan = plan_run(cfg, output_dir, resume_roots, job_overrides)
        if rank_zero_only.rank == 0:
            record_plan(plan, cfg, output_dir, job, job_overrides)
        if plan.completed:
            completed_earlier = report_completed(plan.directory)
            return completed_earlier
        run_dir, resumed_from = plan.directory, plan.checkpoint
        resumed_step = None if resumed_from is None else checkpoint_step(resumed_from)
        if cfg.threads is not None:
            torch.set_num_threads(cfg.threads)
        L.seed_everything(cfg.seed, workers=True, verbose=False)
        module = build_module(cfg)  # a bad model or attention option stops here, before any data work
        datamodule = build_datamodule(cfg)
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
        loggers = build_loggers(
            cfg.logger, run_identity, run_dir, OmegaConf.to_container(cfg, resolve=True), resumed_step
        )
        parts = build_trainer(cfg, run_dir, loggers)
        parts.trainer.fit(module, datamodule=datamodule, ckpt_path=resumed_from)
        test_results = parts.trainer.test(
            module, datamodule=datamodule, ckpt_path=parts.checkpoint.best_model_path, verbose=False
        )
        metrics = final_metrics(parts, test_results)
    except NonFiniteLossError as exception:
        status, error = "nan", str(exception)
    except EXPLAINED_ERRORS as exception:
        status, error = "failed", str(exception)
    except SIGTERMException:
        step = parts.trainer.global_step if parts else None
        status = "interrupted"
        error = (
            f"SIGTERM at step {step}; the state is saved in {run_dir / CHECKPOINT_DIR}: resume=auto continues"
        )
        raise SystemExit(SIGTERM_EXIT_STATUS) from None
    except (KeyboardInterrupt, SystemExit):
        status, error = "interrupted", "interrupted before the end of the run"
        raise
    except Exception as exception:
        status, error = "failed", f"{type(exception).__name__}: {exception}".splitlines()[0]
        if rank_zero_only.rank == 0:
            trace_file = run_dir / "traceback.txt"
            run_dir.mkdir(parents=True, exist_ok=True)
            trace_file.write_text(traceback.format_exc())
            error += f" (traceback: {trace_file})"
    finally:
        finish_loggers(loggers)
        if status != "completed" and parts is not None:
            metrics = {**parts.efficiency.metrics, "train/steps": parts.trainer.global_step, **metrics}
        summary = completed_earlier or make_summary(
            cfg,
            status=status,
            error=error,
            metrics=metrics,
            device=device_description(parts.trainer if parts else None, str(cfg.trainer.accelerator)),
            started=started,
            output_dir=run_dir,
            data=datamodule.description() if datamodule is not None and datamodule.prepared else None,
            resumed_from=resumed_from,
            job=job,
        )
        if rank_zero_only.rank == 0 and completed_earlier is None:  # a skipped job keeps its summary
            path = write_summary(summary, run_dir)
            print(f"\n{format_table([summary])}\nsummary: {path}", flush=True)
            if status == "interrupted":  # the process exits now: say why, as a failed single run does
                print(f"lra: interrupted: {error}", file=sys.stderr, flush=True)
    return summary
