"""OmegaConf resolvers that the config tree uses (registered when ``lra`` is imported).

- ``${lra.budget:DEFAULT}``: the top-level ``features`` budget when it is set, else DEFAULT. Every
  approximate attention sizes its budget option with it (``num_landmarks: ${lra.budget:64}``), so
  ``features=128`` sizes them all at once while ``attention.num_landmarks=32`` still wins.
- ``${lra.precision:ACCELERATOR}``: ``bf16-mixed`` when the run will use a CUDA GPU, else ``32-true``.
- ``${lra.job_name:TASK,ATTENTION,SEED,OVERRIDES}``: a sweep job's name with the options the sweep varies
  (``lra.naming``), for ``hydra.sweep.subdir``.
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

from lra.naming import job_name


def budget(default: int, *, _root_: DictConfig) -> Any:
    """``features`` when set at the top level of the config, else ``default``."""
    features = _root_.get("features")
    return default if features is None else features


def default_precision(accelerator: str) -> str:
    """Mixed precision on a CUDA GPU (bf16, or fp16 where the GPU lacks bf16), 32-bit otherwise.

    ``accelerator`` is the trainer's: ``gpu``/``cuda``, or ``auto`` with CUDA present, means a GPU.
    """
    import torch

    if accelerator not in ("gpu", "cuda", "auto") or not torch.cuda.is_available():
        return "32-true"
    return "bf16-mixed" if torch.cuda.is_bf16_supported() else "16-mixed"


def register_resolvers() -> None:
    """Register the ``lra.*`` resolvers (idempotent)."""
    OmegaConf.register_new_resolver("lra.budget", budget, replace=True)
    OmegaConf.register_new_resolver("lra.precision", default_precision, replace=True)
    OmegaConf.register_new_resolver("lra.job_name", job_name, replace=True)
