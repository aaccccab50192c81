"""``python -m lra task=T attention=A [overrides]``: one run, or a sweep with ``-m`` (Hydra).

A single run that does not complete exits with status 1 and one line that says why (its
summary.json has the details); in a sweep each job records its outcome and the sweep goes on. The main
returns the run's best validation accuracy (NaN when it did not complete): the objective of a
hyperparameter search (``hparams_search=lra``). ``+best=PATH`` trains with a search's best.yaml.
"""

from __future__ import annotations

import logging
import sys
import warnings
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

import lra  # noqa: F401  (registers the lra.* resolvers the configs use)
from lra.config.paths import CONFIG_DIR
from lra.job.sweep_stop import quiet_joblib_schema_warning

quiet_joblib_schema_warning()  # before Hydra composes the config


def resume_roots(hydra_config: DictConfig, output_dir: Path) -> list[Path]:
    """Where ``resume=auto`` looks: the fixed leading folders of the single-run and sweep output patterns
    (``outputs``, ``multirun``)."""
    from lra.job.resume import static_root

    patterns = OmegaConf.to_container(hydra_config, resolve=False)
    return [static_root(patterns[mode]["dir"], output_dir.parent) for mode in ("run", "sweep")]


def refused(hydra_config: DictConfig, cfg: DictConfig, output_dir: Path, error: str) -> float:
    """A job its config check refused (``lra.results.refused_jobs``): its folder goes; a single run stops
    with one line and exit status 1, a sweep's job leaves a note for the sweep's table and the sweep goes
    on (the objective of a search: NaN)."""
    from lra.results.refused_jobs import discard_job_folder, note_refused

    folder = output_dir.resolve()
    roots = [root.resolve() for root in resume_roots(hydra_config, output_dir)]
    discard_job_folder(
        folder, hydra_config.job.name, next((r for r in roots if r in folder.parents), folder.parent)
    )
    if hydra_config.mode == RunMode.RUN:
        print(f"lra: failed: {error}", file=sys.stderr, flush=True)
        sys.exit(1)
    from lra.config.naming import varied_options

    overrides = list(hydra_config.overrides.task)
    row = {"task": cfg.task.name, "attention": cfg.attention.name, "seed": cfg.seed}
    row["options"] = varied_options(overrides, cfg.get("pretrain"))
    note_refused(Path(hydra_config.sweep.dir), hydra_config.job.num, overrides, error, row)
    print(f"lra: job #{hydra_config.job.num} could not start: {error}", file=sys.stderr, flush=True)
    return float("nan")


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="config")
def main(cfg: DictConfig) -> float:
    from lra.config.errors import ConfigError
    from lra.search.best import apply_best, objective

    hydra_config = HydraConfig.get()
    output_dir = Path(hydra_config.runtime.output_dir)
    try:
        if hydra_config.mode == RunMode.RUN and hydra_config.runtime.choices.get("hparams_search"):
            raise ConfigError("hparams_search is a search over many runs: add -m")
        cfg = apply_best(cfg)
        from lra.job.checks import check_config

        check_config(cfg)  # every value error a config can show, before anything of the run is written
    except ConfigError as error:
        return refused(hydra_config, cfg, output_dir, str(error))
    from lra.job.preemption import SubmititRequeue  # imported here so that a bad command line fails
    from lra.job.train import run  # before torch loads

    # Hydra's handlers (console and <run dir>/<job>.log) already take Lightning's messages:
    # without this, Lightning's own console handler would print each of them a second time.
    logging.getLogger("lightning").handlers.clear()
    # Lightning 2.6 with torch >= 2.10 warns on every step about an internal pytree call.
    warnings.filterwarnings("ignore", message=r".*isinstance\(treespec, LeafSpec\)")
    # Its advice on mid-epoch resumes: the loader's position travels in lra.job.training_state's callback.
    warnings.filterwarnings("ignore", message=r".*resuming from a checkpoint that ended before the epoch")
    job_overrides = list(hydra_config.overrides.task)
    requeue = SubmititRequeue.install()  # a SLURM job: pre-emption and time-outs requeue it
    try:
        summary = run(cfg, output_dir, resume_roots(hydra_config, output_dir), job_overrides)
    except SystemExit:
        if requeue is not None:
            requeue.requeue()
        raise
    if summary["status"] != "completed" and hydra_config.mode == RunMode.RUN:
        print(f"lra: {summary['status']}: {summary['error']}", file=sys.stderr, flush=True)
        sys.exit(1)
    return objective(summary)


if __name__ == "__main__":
    from lra.config.errors import ConfigError
    from lra.config.extras import check_command_line
    from lra.config.hydra_errors import one_line_errors

    try:
        check_command_line(sys.argv[1:])  # an optional part that is not installed: one line, before Hydra
    except ConfigError as error:
        sys.exit(f"lra: {error}")
    one_line_errors(main)  # a typo in a group option or key, or an unwritable folder: one line
