"""The typed records a run is built from: one frozen record a part, each resolved once from the composed
config (``lra.job.resolve.job_records``) and handed to that part's builder alone.

- ``DataRecord``: the datamodule (``lra.data``), from ``task.*`` (set, shapes, batch), ``data_root``,
  ``num_workers``, ``persistent_workers``, ``seed``, ``debug_data_size``; with a ``RecallRecord``
  (``task.generator``) when the task's examples come from a recall generator of ``data_prep.recall``
  instead of a prepared set.
- ``ModelRecord``: the encoder (``LRAClassifier``), from ``model.*``, ``attention.*`` and the task's shapes.
- ``OptimRecord``: the LightningModule (``LRALitModule``), from ``task.lr/weight_decay/warmup_steps``
  and ``protocol.*``.
- ``TrainerRecord``: a stage's Lightning Trainer, from ``trainer.*``, ``protocol.clip*``,
  ``task.eval_every`` and ``callbacks``.
- ``PretrainRecord``: the self-pretraining stage, from ``pretrain.*`` and the keys it shares.
- ``RunRecord``: the run's plan, resume, loggers and process, from ``seed``, ``resume``, ``logger``,
  ``threads``, ``steady_heap`` and the job's identity.
- ``SummaryRecord``: summary.json's names for the job and its config as written down, even when the
  config fails its checks.

Step counts are resolved here once: ``OptimRecord.schedule_steps`` is the length of the learning-rate
schedule (``protocol.schedule_steps``, else the fine-tuning's steps: ``trainer.max_steps`` less the
pretraining's share), ``TrainerRecord.max_steps`` the stage's own steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class RecallRecord:
    """A generated recall task (``task.generator``): the generator's name and options, and the sizes of
    its sets, each drawn from the run's seed: the training set fixed, or fresh each batch."""

    generator: str  # a task of data_prep.recall.TASKS
    options: dict[str, Any]  # its options (the rest at their defaults)
    train_examples: int  # the fixed training set, cycled in epochs; fresh: the examples of an epoch
    test_examples: int  # the fixed test set (validation uses it too)
    training_set: str = "fixed"  # fixed | fresh: new examples each batch


@dataclass(frozen=True)
class DataRecord:
    """The prepared set ``dataset`` under ``root`` in batches of ``batch_size`` examples; the shapes the
    model is built for, which the set must match."""

    root: Path
    dataset: str
    batch_size: int
    seq_len: int
    vocab_size: int
    num_classes: int
    dual: bool  # Retrieval: two documents an example
    val_from_test: bool
    num_workers: int
    persistent_workers: bool  # the loader workers live for the whole fit
    seed: int
    small_size: int | None  # debug_data_size: a small stand-in set when the recipe's is missing
    accumulate: int  # trainer.accumulate_grad_batches: batches per optimizer step
    recall: RecallRecord | None = None  # generated examples instead of the prepared set


@dataclass(frozen=True)
class ModelRecord:
    """The encoder and classifier: its shapes, the attention node it instantiates in every layer and the
    options of ``conf/model/``."""

    vocab_size: int  # the task's, with [MASK] when the run self-pretrains
    num_classes: int
    seq_len: int
    dual: bool
    attention: dict[str, Any]  # the resolved attention node: _target_, _partial_, name and options
    options: dict[str, Any]  # the model's keyword options (conf/model/, ``compile`` aside)
    compile: bool
    head: str = "sequence"  # sequence: one class per example (LRA) | token: one per position (recall)
    state_size: int | None = None  # numbers per layer the attention carries across the sequence


@dataclass(frozen=True)
class OptimRecord:
    """The LightningModule's training: AdamW at ``lr`` under ``schedule`` over ``schedule_steps`` steps,
    the steps whose evaluation may select the tested checkpoint, and the loss check."""

    num_classes: int
    lr: float
    weight_decay: float
    warmup_steps: int
    schedule: str
    schedule_steps: int
    selectable_after: int  # the last step whose evaluation cannot select the best checkpoint
    betas: tuple[float, float]
    eps: float
    attention_name: str  # names the attention in a non-finite loss's error
    finite_check_every: int
    token_level: bool = False  # loss and accuracy over the labelled positions (the token head)


@dataclass(frozen=True)
class TrainerRecord:
    """A stage's Lightning Trainer: the ``trainer.*`` arguments with the stage's ``max_steps``, gradient
    clipping, the evaluation interval and the extra callback nodes."""

    options: dict[str, Any]  # trainer.* (max_steps is the stage's own, below)
    max_steps: int  # optimizer steps: with accumulate_grad_batches N, N batches each
    clip: str | None  # norm | value | None
    clip_value: float
    eval_every: int  # optimizer steps
    callbacks: dict[str, Any]  # name -> node with a _target_


@dataclass(frozen=True)
class PretrainRecord:
    """``pretrain=masked``: the objective's settings, the stage's data and trainer, the weights file of
    ``pretrain.from`` (absolute; None: this job pretrains) and what its weights are made for."""

    dim: int
    vocab_size: int  # the task's (the objective adds [MASK])
    mask_prob: float
    loss: str
    lr: float
    weight_decay: float
    warmup_steps: int
    schedule: str
    betas: tuple[float, float]
    eps: float
    seed: int
    attention_name: str
    finite_check_every: int
    data: DataRecord  # in batches of pretrain.batch_size
    trainer: TrainerRecord  # max_steps: the pretraining's steps
    weights_from: Path | None
    identity: dict[str, Any]  # what loaded weights must share with this run (task, set, shapes, attention)
    planned: dict[str, Any]  # summary.json's pretrain record before the stage runs


@dataclass(frozen=True)
class RunRecord:
    """The run's identity, planning and logging: what names it, what ``resume`` compares, where it logs."""

    task: str
    attention: str
    seed: int
    job: dict[str, Any]  # name, options, preset, fingerprint (lra.job.run_identity.job_record)
    comparable: dict[str, Any]  # the config that makes it the job it is (run.json's "config")
    overrides: tuple[str, ...]  # its command-line overrides
    resume: str | None
    loggers: dict[str, dict[str, Any]]  # logger name -> options
    hparams: dict[str, Any]  # the resolved config, each logger's run config
    budget: int | None  # the attention's budget option
    threads: int | None
    steady_heap: bool
    masked: bool  # the run self-pretrains before fine-tuning


@dataclass(frozen=True)
class SummaryRecord:
    """What summary.json says of the job whatever its outcome: the config as it resolves (as written where
    it does not), its names and the accelerator asked for."""

    task: str
    attention: str
    seed: Any  # as written: a job refused for a bad seed names it
    config: dict[str, Any]
    accelerator: str
    job: dict[str, Any]


@dataclass(frozen=True)
class JobRecords:
    """Every record of a checked job; ``pretrain`` is None for a run from scratch."""

    run: RunRecord
    data: DataRecord
    model: ModelRecord
    optim: OptimRecord
    trainer: TrainerRecord
    pretrain: PretrainRecord | None
