"""Exact resume: the training loader's position and the RNG states travel in the checkpoint.

Lightning's checkpoint holds the model, optimizer, scheduler and loop counters, but a run resumed
mid-epoch would start the epoch's data order again and draw dropout masks (and Performer's random
features) from a freshly seeded generator. ``TrainingOrderState`` adds the rest to every checkpoint,
so that on the CPU a resumed run ends with the same weights and metrics, bit for bit, as a run that
was never interrupted (``tests/test_exact_resume.py``).
"""

from __future__ import annotations

import random
from typing import Any

import lightning as L
import numpy as np
import torch
from lightning.pytorch.callbacks import Callback


def rng_states() -> dict[str, Any]:
    """The global RNG states, as tensors and plain values (a checkpoint loads them with weights_only)."""
    kind, keys, position, has_gauss, cached = np.random.get_state()
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "numpy": [kind, torch.from_numpy(keys.astype(np.int64)), position, has_gauss, cached],
        "python": random.getstate(),
    }


def set_rng_states(states: dict[str, Any]) -> None:
    torch.set_rng_state(states["torch"])
    if states["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])
    kind, keys, position, has_gauss, cached = states["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), position, has_gauss, cached))
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))


class TrainingOrderState(Callback):
    """Saves the training sampler's position and the RNG states in each checkpoint; restores them when
    training starts from one. The datamodule must have a ``train_sampler``. It saves:

    - the position of the training sampler (``lra.data.EpochPermutationSampler``): the epoch and the
      index within its permutation where the next batch starts (all processes' batches together);
    - the torch (CPU and CUDA), numpy and Python RNG states at the moment of saving.

    A resumed run puts the sampler back as soon as the checkpoint is loaded, before Lightning creates
    the training loader's iterator: with loader workers (``num_workers`` > 0) that iterator draws its
    first batches' indices from the sampler at once, to prefetch them, and the position must already
    be in place. The RNG states go back at the start of training (after Lightning's sanity check,
    which runs with its RNG isolated). The loaders draw their worker seeds from their own generators
    (``LRADataModule.loader``), never from the global one, and nothing in a worker draws from a
    worker's RNG: a batch is a function of its indices alone.
    """

    def __init__(self) -> None:
        self.trainer: L.Trainer | None = None
        self.restored: dict[str, Any] | None = None

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        self.trainer = trainer

    def state_dict(self) -> dict[str, Any]:
        if self.trainer is None:
            return {}
        trainer = self.trainer
        epochs = trainer.fit_loop.epoch_progress.current
        batches = trainer.fit_loop.epoch_loop.batch_progress.current.completed
        if epochs.completed == epochs.ready:  # between epochs (a stop after an epoch's last step): none yet
            batches = 0
        return {  # under DDP each process took every world_size-th index of the epoch's permutation
            "epoch": trainer.current_epoch,
            "index": batches * trainer.datamodule.batch_size * trainer.world_size,
            "rng": rng_states(),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Put the training sampler where the checkpoint stood (``setup`` has run: Lightning loads the
        checkpoint after it), and keep the RNG states for the start of training."""
        if not state_dict:
            return
        self.trainer.datamodule.train_sampler.resume_at(state_dict["epoch"], state_dict["index"])
        self.restored = state_dict["rng"]

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self.restored is None:
            return
        set_rng_states(self.restored)
        self.restored = None
