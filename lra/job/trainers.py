"""The Lightning Trainer of a training stage (fine-tuning, or self-pretraining before it).

Each stage's trainer is built from its ``TrainerRecord``: ``trainer.*``'s options with the stage's own
``max_steps``, gradient clipping as ``protocol.clip`` says; it validates every ``task.eval_every``
optimizer steps (of ``trainer.accumulate_grad_batches`` batches each) and at its last step, saves the
training order and RNG states in every checkpoint (``lra.job.training_state``), keeps the stage's best
checkpoint and its full state in ``checkpoints/<last_name>.ckpt`` after every evaluation and after an
exception (a SIGTERM or Ctrl+C raises one at the end of the current step on every process,
``lra.job.agreed_stop``): what ``resume`` continues from. The extra callbacks of ``callbacks`` run after
these.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lightning as L
import torch
from hydra.utils import instantiate
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.loggers import Logger

from lra.config.records import TrainerRecord
from lra.job.agreed_stop import AgreedStop
from lra.job.callbacks import EfficiencyMonitor, ValidateAtLastStep
from lra.job.checkpoint_files import VerifiedCheckpointIO
from lra.job.job_state import TrainerParts
from lra.job.preemption import lightning_plugins
from lra.job.progress_bar import StageProgressBar
from lra.job.resume import CHECKPOINT_DIR
from lra.job.training_state import TrainingOrderState

# the Trainer's precision -> the autocast dtype its training step runs under (None: 32-bit, no autocast)
AUTOCAST_DTYPES = {"32-true": None, "32": None, "bf16-mixed": torch.bfloat16, "16-mixed": torch.float16}


def clipping(record: TrainerRecord) -> dict[str, Any]:
    """The Trainer's gradient-clipping arguments for ``protocol.clip`` (norm, value or null)."""
    if record.clip is None:
        return {"gradient_clip_val": None}
    return {"gradient_clip_val": record.clip_value, "gradient_clip_algorithm": record.clip}


def best_checkpoint(
    output_dir: Path, name: str, monitor: str, kind: type[ModelCheckpoint] = ModelCheckpoint
) -> ModelCheckpoint:
    """``checkpoints/<name>.ckpt``: the weights of the evaluation with the highest ``monitor``."""
    return kind(
        dirpath=output_dir / CHECKPOINT_DIR,
        filename=name,
        monitor=monitor,
        mode="max",
        save_top_k=1,
        auto_insert_metric_name=False,
    )


def stage_trainer(
    record: TrainerRecord,
    output_dir: Path,
    loggers: list[Logger],
    *,
    best: ModelCheckpoint,
    last_name: str,
    efficiency: EfficiencyMonitor,
    title: str,
) -> TrainerParts:
    """The trainer of one stage of ``record.max_steps`` steps (module docstring); ``best`` keeps its best
    checkpoint, ``checkpoints/<last_name>.ckpt`` its full state; ``title`` heads its progress bar."""
    last_state = ModelCheckpoint(  # after ``best``, so that it saves that callback's updated state
        dirpath=output_dir / CHECKPOINT_DIR,
        filename=last_name,
        monitor=None,
        save_top_k=1,
        save_on_exception=True,
        enable_version_counter=False,
    )
    extra = [instantiate(node) for node in record.callbacks.values()]
    options = {**record.options, "max_steps": record.max_steps}
    batches_per_step = options.get("accumulate_grad_batches", 1)
    # The bar reads the logged loss back from the device: only every log_every_n_steps steps.
    refresh = options["log_every_n_steps"]
    progress = [StageProgressBar(title, refresh_rate=refresh)] if options["enable_progress_bar"] else []
    trainer = L.Trainer(
        **options,
        **clipping(record),
        val_check_interval=record.eval_every * batches_per_step,  # Lightning counts batches here
        check_val_every_n_epoch=None,
        callbacks=[
            efficiency,
            TrainingOrderState(),
            best,
            last_state,
            ValidateAtLastStep(),
            *progress,
            *extra,
            AgreedStop(),  # last: a signal sent during a step's callbacks stops training after that step
        ],
        logger=loggers or False,
        plugins=[*lightning_plugins(), VerifiedCheckpointIO()],  # atomic, stamped, verified
        default_root_dir=output_dir,
    )
    return TrainerParts(trainer, efficiency, best)
