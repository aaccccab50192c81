"""Where a run trains and what it continues from: ``resume=null`` (a fresh run), ``auto`` or a PATH
(``plan_run`` says how each one chooses).

"The same job" is ``lra.job.run_identity``'s definition. Every run folder holds ``run.json`` (that config,
its fingerprint, the job's name, options, overrides and W&B run id) and, from its first evaluation
on, ``checkpoints/last.ckpt`` (Lightning's full state with the loader's position and the RNG states);
a self-pretrained run also ``checkpoints/pretrain-last.ckpt``, the same for its pretraining stage,
which a run without ``last.ckpt`` yet continues from (``lra.job.pretrain_stage``). Each is verified against
its recorded SHA-256 before a resume, which falls back to the newest that verifies
(``lra.job.checkpoint_files``). A resumed run continues
in the ORIGINAL folder, so reports see one run; the resuming command's own Hydra folder keeps only
its logs and ``resumed.json``, a pointer to where the run went on.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from data_prep.storage import write_json
from lra.config.errors import ConfigError
from lra.config.records import RunRecord
from lra.job.checkpoint_files import (
    CHECKPOINT_DIR,
    LAST_CHECKPOINT,
    PRETRAIN_BEST_CHECKPOINT,
    PRETRAIN_LAST_CHECKPOINT,
    check_checkpoint,
    resumable_checkpoint,
    saved_checkpoints,
)
from lra.job.run_identity import (
    RUN_FILE,
    comparable_overrides,
    differing_keys,
    job_fingerprint,
    read_run_file,
    recorded_fingerprint,
    run_status,
)
from lra.results.summary_json import POINTER_FILE, SUMMARY_FILE

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunPlan:
    """Where this run writes (``directory``), its W&B run id, and the checkpoint it continues (or None);
    ``completed``: the job already completed in ``directory``, nothing is to be trained."""

    directory: Path
    wandb_run_id: str
    checkpoint: Path | None = None
    completed: bool = False


def is_pretraining_checkpoint(path: Path | None) -> bool:
    """Whether ``path`` holds the state of a pretraining stage (``pretrain-last`` or ``-best.ckpt``)."""
    return path is not None and path.stem in (PRETRAIN_LAST_CHECKPOINT, PRETRAIN_BEST_CHECKPOINT)


def run_folders(roots: Sequence[Path]) -> list[tuple[Path, dict[str, Any]]]:
    """Every run folder under ``roots`` (or a root itself) with its ``run.json``, each once."""
    found: dict[Path, dict[str, Any]] = {}
    for root in dict.fromkeys(Path(root).resolve() for root in roots):
        if not root.is_dir():
            continue
        for path in root.rglob(RUN_FILE):  # the root's own run.json too
            run_file = read_run_file(path.parent)
            if run_file is not None:
                found.setdefault(path.parent, run_file)
    return list(found.items())


RunFolders = Sequence[tuple[Path, dict[str, Any]]]  # (run folder, its run.json), as run_folders gives them


def find_unfinished_run(folders: RunFolders, comparable: dict[str, Any]) -> Path | None:
    """The run folder of ``folders`` that ``resume=auto`` continues (``plan_run``), or None."""
    fingerprint = job_fingerprint(comparable)
    candidates = []
    for directory, run_file in folders:
        saved = saved_checkpoints(directory / CHECKPOINT_DIR)  # verified once chosen: resumable_checkpoint
        same_job = recorded_fingerprint(run_file) == fingerprint
        if same_job and saved and run_status(directory) != "completed":
            candidates.append((saved[0].stat().st_mtime, directory))
    return max(candidates)[1] if candidates else None


def find_completed_run(folders: RunFolders, comparable: dict[str, Any]) -> Path | None:
    """The newest run folder of ``folders`` where a run of this config completed, or None."""
    fingerprint = job_fingerprint(comparable)
    candidates = [
        ((directory / SUMMARY_FILE).stat().st_mtime, directory)
        for directory, run_file in folders
        if recorded_fingerprint(run_file) == fingerprint and run_status(directory) == "completed"
    ]
    return max(candidates)[1] if candidates else None


def check_same_command_same_config(
    folders: RunFolders, comparable: dict[str, Any], job_overrides: Sequence[str]
) -> None:
    """A ``ConfigError`` when a run of the same command-line overrides had another config: re-running a
    sweep after its config files changed would otherwise start a different job under the same name."""
    overrides = comparable_overrides(job_overrides)
    if not overrides:
        return
    fingerprint = job_fingerprint(comparable)
    for directory, run_file in folders:
        if run_file.get("overrides") == overrides and recorded_fingerprint(run_file) != fingerprint:
            raise ConfigError(
                f"resume=auto: the earlier run of this job in {directory} had another config "
                f"({named_differences(run_file, comparable)} differ: the config changed since); restore it, "
                "or resume=null to start this job afresh"
            )


def named_differences(run_file: dict[str, Any], comparable: dict[str, Any]) -> str:
    """The first five dotted keys whose values differ between a run.json's config and ``comparable``."""
    return ", ".join(key.rstrip(".") for key in differing_keys(run_file["config"], comparable)[:5])


def continued_run(directory: Path, checkpoint: Path, comparable: dict[str, Any]) -> RunPlan:
    """Continue the run in ``directory`` from ``checkpoint``, if it is the same config and unfinished."""
    run_file = read_run_file(directory)
    if run_file is None:
        raise FileNotFoundError(f"resume: {directory} has no readable {RUN_FILE}; it is not a run folder")
    if recorded_fingerprint(run_file) != job_fingerprint(comparable):
        raise ConfigError(
            f"resume: the run in {directory} has another config ({named_differences(run_file, comparable)} "
            "differ); resume it with the same overrides"
        )
    if run_status(directory) == "completed":
        raise ConfigError(f"resume: the run in {directory} has already completed")
    return RunPlan(directory, run_file["wandb_run_id"], checkpoint)


def plan_from_path(path: Path, output_dir: Path, comparable: dict[str, Any]) -> RunPlan:
    if path.is_dir():
        checkpoint = resumable_checkpoint(path)
        if checkpoint is None:
            raise FileNotFoundError(
                f"resume={path}: no {CHECKPOINT_DIR}/{LAST_CHECKPOINT}.ckpt in that folder "
                f"(nor {PRETRAIN_LAST_CHECKPOINT}.ckpt; a run saves it at its first evaluation); "
                "resume=null starts afresh"
            )
        return continued_run(path, checkpoint, comparable)
    if path.is_file() and path.suffix == ".ckpt":
        check_checkpoint(path)  # the file asked for, or none: no fallback to another
        directory = path.parent.parent
        if path.parent.name == CHECKPOINT_DIR and (directory / RUN_FILE).is_file():
            return continued_run(directory, path, comparable)
        return RunPlan(output_dir, new_run_id(), path)
    raise FileNotFoundError(
        f"resume={path} is neither a run folder nor a .ckpt file; valid: null, auto, a run folder, a .ckpt"
    )


def checkpoint_step(path: Path) -> int:
    """The global step a Lightning checkpoint was saved at."""
    try:
        return int(torch.load(path, map_location="cpu", weights_only=True, mmap=True)["global_step"])
    except Exception as error:
        raise ConfigError(
            f"resume: cannot read the checkpoint {path} ({type(error).__name__}); resume from another one"
        ) from None


def new_run_id() -> str:
    return uuid.uuid4().hex[:8]


def plan_auto(
    comparable: dict[str, Any], output_dir: Path, roots: Sequence[Path], job_overrides: Sequence[str]
) -> RunPlan:
    """``resume=auto``: continue, skip as completed, refuse (changed config) or start afresh."""
    searched = run_folders([output_dir, *roots])  # walked once for the three questions below
    unfinished = find_unfinished_run(searched, comparable)
    if unfinished is not None:
        return continued_run(unfinished, resumable_checkpoint(unfinished), comparable)
    completed = find_completed_run(searched, comparable)
    if completed is not None:
        log.info("resume=auto: this job completed in %s; reporting that run, nothing is trained", completed)
        return RunPlan(completed, read_run_file(completed)["wandb_run_id"], completed=True)
    check_same_command_same_config(searched, comparable, job_overrides)
    log.info(
        "resume=auto: no unfinished run of this config with a checkpoint under %s, and none completed; "
        "starting afresh",
        ", ".join(str(root) for root in roots) or "(no output root)",
    )
    return RunPlan(output_dir, new_run_id())


def plan_run(run: RunRecord, output_dir: Path, roots: Sequence[Path] = ()) -> RunPlan:
    """Where the run of ``run`` trains, after its ``resume``; ``roots``: what ``resume=auto`` searches.

    - ``resume=auto`` (what a restarted sweep uses), for each job in turn: continue the newest unfinished
      run of the same job under the output roots (and the job's own folder) that has a last checkpoint;
      else, when a run of the same job completed, skip the job and report that run's summary.json;
      else start afresh. A run of the same command-line overrides but another config (the config files
      changed since) is refused with one line instead: ``resume=null`` starts it afresh.
    - ``resume=PATH``: a run folder (the newest of its checkpoints that verifies:
      ``lra.job.checkpoint_files.resumable_checkpoint``) or a ``.ckpt`` file. A checkpoint inside a run
      folder continues that folder (its config must equal this one); any other ``.ckpt``
      starts this run's new folder from its state.
    - ``resume=null``: a fresh run, except that a job whose own folder already holds its unfinished run
      with a checkpoint continues it (a SLURM job requeued after pre-emption, see ``lra.job.preemption``).

    Runs are matched by fingerprint; when a run is refused for another config, the keys that differ
    are named from the config its ``run.json`` records.
    """
    comparable, resume = run.comparable, run.resume
    if resume is None:
        own_run = read_run_file(output_dir)  # the job's own folder only: a requeued job's
        if own_run is None or find_unfinished_run([(output_dir, own_run)], comparable) is None:
            return RunPlan(output_dir, new_run_id())
        plan = continued_run(output_dir, resumable_checkpoint(output_dir), comparable)
    elif resume == "auto":
        plan = plan_auto(comparable, output_dir, roots, run.overrides)
        if plan.checkpoint is None:
            return plan
    else:
        plan = plan_from_path(Path(resume).expanduser().resolve(), output_dir, comparable)
    log.info("Resuming from %s in %s", plan.checkpoint, plan.directory)
    return plan


def record_plan(plan: RunPlan, run: RunRecord, output_dir: Path) -> None:
    """``run.json`` in the run's own folder, or ``resumed.json`` in ``output_dir`` if it goes on elsewhere."""
    if plan.directory.resolve() == output_dir.resolve():
        record = {
            "config": run.comparable,
            **run.job,
            "overrides": comparable_overrides(run.overrides),
            "wandb_run_id": plan.wandb_run_id,
        }
        write_json(output_dir / RUN_FILE, record)
    else:
        checkpoint = None if plan.checkpoint is None else str(plan.checkpoint)
        pointer = {"continues": str(plan.directory), "checkpoint": checkpoint}
        write_json(output_dir / POINTER_FILE, {**pointer, "skipped_as_completed": plan.completed})


def static_root(pattern: str, fallback: Path) -> Path:
    """The leading folders of a Hydra output-dir pattern before its first interpolation (``outputs``)."""
    parts = []
    for part in Path(pattern).parts:
        if "${" in part:
            break
        parts.append(part)
    return Path(*parts) if parts else fallback
