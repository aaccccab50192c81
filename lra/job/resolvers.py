"""OmegaConf resolvers that the config tree uses (registered when ``lra`` is imported).

- ``${lra.budget:DEFAULT}``: the top-level ``features`` budget when set, else DEFAULT: ``features=128``
  sizes every approximate attention's budget option at once, ``attention.num_landmarks=32`` still wins.
- ``${lra.precision:ACCELERATOR}``: ``bf16-mixed`` when the run will use a CUDA GPU, else ``32-true``.
- ``${lra.threads_per_job:DEFAULT}``: this process's cores divided among the jobs a launcher runs at
  once (``hydra/launcher=joblib``), so they do not contend for cores, else DEFAULT; ``threads=4`` wins.
- ``${lra.job_name:TASK,ATTENTION,SEED,OVERRIDES,PRETRAIN_MODE}`` and
  ``${lra.study_name:TASK,ATTENTION,SEED,OVERRIDES}``: a sweep job's name (``lra.config.naming``) and a
  search's study name (``lra.search.study``), for folders.
- ``${lra.config_groups:}``: the config groups ``python -m lra --help`` lists (``lra.config.help_groups``).
- ``${lra.locality_windows:SEQ_LEN,CLS_TOKEN}``: the windows ``experiment=locality`` sweeps for that
  length, ``8,16,32,...`` up to the first that covers every key (``locality_windows``).
- ``${lra.causal_form:ATTENTION}``: whether the registry's ATTENTION has a causal form
  (``attention_zoo``), e.g. ``causal: ${lra.causal_form:${attention.name}}``: the diagnostic presets
  run an entry causal where it can be, and in their non-causal cell otherwise.
- ``${lra.if:CONDITION,THEN,ELSE}``: THEN when CONDITION is true, else ELSE, e.g. the diagnostic
  tier's ``max_steps: ${lra.if:${model.causal},1200,3000}``.
- ``${lra.not:VALUE}``: the boolean negation, e.g. ``bidirectional: ${lra.not:${model.causal}}``: a
  mixer scans one way under ``model.causal=true``, both ways otherwise.
- ``${lra.width_axis:ATTENTION,FEATURES,BASE,WIDTH}``: the model width of a state-size sweep over the
  ``features`` budget: WIDTH for an attention with a budget option (the budget sizes its state), else
  WIDTH · FEATURES / BASE (its state grows with the width, as Zoology varies ``d_model``).
- ``${lra.times:A,B}``: A · B, e.g. the CPU tier's Hyena filter of ``${lra.times:${features},2}`` taps.
- ``${lra.recall_shape:KEY}``: ``seq_len``, ``vocab_size`` or ``num_classes`` of the recall task that
  ``task.generator`` builds (``data_prep.recall``), so a recall task's shapes are stated once.
"""

from __future__ import annotations

import os
from typing import Any

from omegaconf import DictConfig, OmegaConf

from lra.config.help_groups import user_config_groups
from lra.config.naming import job_name
from lra.search.study import study_name

BUDGET_RESOLVER = "lra.budget"  # lra.job.shortcuts names ``features`` in the errors of the keys it sets


def budget(default: int, *, _root_: DictConfig) -> Any:
    """``features`` when set at the top level of the config, else ``default``."""
    features = _root_.get("features")
    return default if features is None else features


def recall_shape(key: str, *, _root_: DictConfig) -> int:
    """``key`` (one of ``SHAPES``) of the task ``task.generator`` builds."""
    from lra.data.recall import SHAPES, recall_task  # torch and Lightning, only for a recall task

    if key not in SHAPES:
        raise ValueError(f"lra.recall_shape:{key}: valid keys are {', '.join(SHAPES)}")
    return getattr(recall_task(OmegaConf.to_container(_root_.task.generator, resolve=True)), key)


def default_precision(accelerator: str) -> str:
    """Mixed precision on a CUDA GPU (bf16, or fp16 where the GPU lacks bf16), 32-bit otherwise.

    ``accelerator`` is the trainer's: ``gpu``/``cuda``, or ``auto`` with CUDA present, means a GPU.
    """
    import torch

    if accelerator not in ("gpu", "cuda", "auto") or not torch.cuda.is_available():
        return "32-true"
    return "bf16-mixed" if torch.cuda.is_bf16_supported() else "16-mixed"


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS tells, else every core)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def parallel_jobs() -> int | None:
    """How many jobs the running Hydra launcher runs at once on this machine (its ``n_jobs``, joblib's
    meaning: -1 every core, -2 all but one, ...), or None outside a launcher that has ``n_jobs``."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return None
    n_jobs = HydraConfig.get().launcher.get("n_jobs")
    if n_jobs is None:
        return None
    return n_jobs if n_jobs >= 1 else max(1, usable_cores() + 1 + n_jobs)


def threads_per_job(default: Any) -> Any:
    """``usable_cores() // n_jobs`` (at least 1) under a launcher with ``n_jobs``, else ``default``."""
    jobs = parallel_jobs()
    return default if jobs is None else max(1, usable_cores() // jobs)


def locality_windows(seq_len: int, cls_token: bool = False) -> str:
    """``"8,16,32,..."``: the powers of two from 8 up to the first w >= 2N − 2, N the positions the core
    sees (``seq_len``, and a CLS token in front): ``window`` attends within ±⌊w/2⌋, so there every
    query sees every key and the top of the sweep is exact attention."""
    full = 2 * (seq_len + int(cls_token)) - 2
    windows = [8]
    while windows[-1] < full:
        windows.append(2 * windows[-1])
    return ",".join(map(str, windows))


def causal_form(attention: str) -> bool:
    """Whether ``attention`` is registered with a causal form (False for a name the registry lacks: the
    config check names it)."""
    import attention_zoo

    return attention in attention_zoo.available() and attention_zoo.spec(attention).causal


def width_axis(attention: str, features: int, base: int, width: int) -> int:
    """The width of a state-size sweep (module docstring): ``width`` where ``attention`` has a budget
    option, else ``width * features // base``."""
    import attention_zoo

    budgeted = attention in attention_zoo.available() and attention_zoo.spec(attention).budget_option
    return width if budgeted else width * features // base


def register_resolvers() -> None:
    """Register the ``lra.*`` resolvers (idempotent)."""
    OmegaConf.register_new_resolver(BUDGET_RESOLVER, budget, replace=True)
    OmegaConf.register_new_resolver("lra.precision", default_precision, replace=True)
    OmegaConf.register_new_resolver("lra.threads_per_job", threads_per_job, replace=True)
    OmegaConf.register_new_resolver("lra.job_name", job_name, replace=True)
    OmegaConf.register_new_resolver("lra.study_name", study_name, replace=True)
    OmegaConf.register_new_resolver("lra.config_groups", user_config_groups, replace=True)
    OmegaConf.register_new_resolver("lra.locality_windows", locality_windows, replace=True)
    OmegaConf.register_new_resolver("lra.recall_shape", recall_shape, replace=True)
    OmegaConf.register_new_resolver("lra.not", lambda value: not value, replace=True)
    OmegaConf.register_new_resolver("lra.causal_form", causal_form, replace=True)
    OmegaConf.register_new_resolver("lra.width_axis", width_axis, replace=True)
    OmegaConf.register_new_resolver("lra.times", lambda first, second: first * second, replace=True)
    OmegaConf.register_new_resolver(
        "lra.if", lambda condition, then, otherwise: then if condition else otherwise, replace=True
    )
