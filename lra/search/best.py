"""``<sweep>/best.yaml``: a study's best trial as an override of a training run (``+best=PATH``).

best.yaml::

    study: listops-nystrom-max_steps=2000-s0   # the study and where it is stored
    storage: sqlite:///multirun/search/listops-nystrom-max_steps=2000-s0/optuna.db
    task: listops
    attention: nystrom
    value: 0.41            # its best val/acc_best
    trial: 7
    params: {task.lr: 0.00031, task.warmup_steps: 412, ...}
    command: python -m lra -m task=listops attention=nystrom +best=... seed=0,1,2

``python -m lra task=listops attention=nystrom +best=PATH`` trains with ``params`` set (``apply_best``);
the task and attention must be the study's.
"""

from __future__ import annotations

import math
import os
import shlex
import socket
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from lra.config.errors import ConfigError

BEST_FILE = "best.yaml"
BEST_KEY = "best"  # +best=PATH
# Options of a search that set the trials' budget, not what the tuned run trains: the command in
# best.yaml leaves them out, so the tuned run trains the full protocol.
TRIAL_BUDGET_KEYS = ("trainer.max_steps",)
TUNED_SEEDS = "0,1,2"


def objective(summary: dict[str, Any]) -> float:
    """What a trial returns to the search: its best validation accuracy, or NaN (a failed trial) when the
    run did not complete or has none."""
    value = summary["metrics"].get("val/acc_best")
    completed = summary["status"] == "completed" and value is not None and math.isfinite(value)
    return float(value) if completed else float("nan")


def tuned_command(task: str, attention: str, fixed: dict[str, str], best_file: Path) -> str:
    """The command that trains the best parameters for 3 seeds with the search's fixed options."""
    kept = [f"{key}={value}" for key, value in fixed.items() if key not in TRIAL_BUDGET_KEYS]
    words = ["python", "-m", "lra", "-m", f"task={task}", f"attention={attention}", *kept]
    # The path is quoted for Hydra's override grammar (a study folder's name holds '='), then for the shell.
    best = f"\"+{BEST_KEY}='{best_file}'\""
    return f"{shlex.join(words)} {best} seed={TUNED_SEEDS}"


def write_best(path: Path, record: dict[str, Any]) -> Path:
    """Write ``record`` to ``path`` whole: every worker of a shared study writes it when it stops, so each
    writes a file of its own (host and pid) and renames it over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.tmp-{socket.gethostname()}-{os.getpid()}")
    OmegaConf.save(OmegaConf.create(record), partial)
    os.replace(partial, path)
    return path


def apply_best(cfg: DictConfig) -> DictConfig:
    """``cfg`` with the parameters of the best.yaml at ``cfg.best`` set (when ``+best=PATH`` was given);
    a ``ConfigError`` when the file is missing or its study tuned another task or attention."""
    path = cfg.get(BEST_KEY)
    if path is None:
        return cfg
    try:
        best = OmegaConf.load(path)
    except OSError as error:
        raise ConfigError(f"+best={path}: cannot read it ({error.strerror})") from None
    for key in ("task", "attention"):
        if best[key] != cfg[key].name:
            raise ConfigError(f"+best={path} tuned {key}={best[key]}, but this run has {key}={cfg[key].name}")
    for key, value in best.params.items():
        OmegaConf.update(cfg, key, value, merge=False)
    return cfg
