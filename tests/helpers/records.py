"""A composed config's parts built as ``lra.job.resolve`` resolves them, for tests that build one part
(without the checks ``lra.job.resolve.job_records`` runs first)."""

from __future__ import annotations

from collections.abc import Sequence

from omegaconf import DictConfig

from lra.config.records import RunRecord
from lra.job.resolve import model_record, optim_record, run_record, summary_record
from lra.job.train import build_model, build_module
from lra.model.encoder import LRAClassifier
from lra.model.module import LRALitModule


def model_of(cfg: DictConfig) -> LRAClassifier:
    return build_model(model_record(cfg))


def module_of(cfg: DictConfig) -> LRALitModule:
    """The LightningModule over all of ``trainer.max_steps`` (a run from scratch's)."""
    return build_module(optim_record(cfg, cfg.trainer.max_steps), model_of(cfg))


def run_of(cfg: DictConfig, job_overrides: Sequence[str] = ()) -> RunRecord:
    return run_record(cfg, summary_record(cfg, job_overrides).job, job_overrides)
