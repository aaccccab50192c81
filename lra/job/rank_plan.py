"""One run plan for every process of a DDP job: process 0 decides, the processes Lightning starts receive it.

Under ``trainer=ddp`` Lightning starts the other processes of a node itself, as ``python -m lra`` with
the same overrides and process 0's ``hydra.run.dir`` (``_SubprocessScriptLauncher``). Planning again
there would search other folders (that ``hydra.run.dir`` is the resume roots' fixed part too) and could
find another run, or none, and the processes would then wait on different collectives for ever. So
process 0 puts its ``RunPlan`` in the environment (``PLAN_ENV``) before Lightning copies it into the
processes it starts, and those take it as it is.

Processes started outside Lightning (``srun`` under SLURM) each plan from the same files: ``resume``
picks a folder and checkpoint from what is on disk, which no process changes before training starts.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

from lightning.fabric.utilities.rank_zero import rank_zero_only

from lra.config.records import RunRecord
from lra.job.resume import RunPlan, plan_run

PLAN_ENV = "LRA_RUN_PLAN"  # process 0's plan, as JSON, in the processes Lightning starts
PARENT_WAIT_S = 60  # how long a started process waits for process 0 to exit after an interrupt


def encoded(plan: RunPlan) -> str:
    checkpoint = None if plan.checkpoint is None else str(plan.checkpoint)
    return json.dumps([str(plan.directory), plan.wandb_run_id, checkpoint, plan.completed])


def decoded(text: str) -> RunPlan:
    directory, run_id, checkpoint, completed = json.loads(text)
    return RunPlan(Path(directory), run_id, None if checkpoint is None else Path(checkpoint), completed)


def received_plan() -> RunPlan | None:
    """Process 0's plan, in a process that Lightning started for it; None in process 0 or elsewhere."""
    text = os.environ.get(PLAN_ENV)
    return decoded(text) if text and rank_zero_only.rank != 0 else None


def shared_plan(run: RunRecord, output_dir: Path, roots: Sequence[Path] = ()) -> RunPlan:
    """``lra.job.resume.plan_run`` in process 0, handed on to the processes Lightning starts (module doc)."""
    plan = received_plan()
    if plan is None:
        plan = plan_run(run, output_dir, roots)
        if rank_zero_only.rank == 0:
            os.environ[PLAN_ENV] = encoded(plan)
    return plan


def outlive_process_zero() -> None:
    """In a process Lightning started: wait (at most ``PARENT_WAIT_S``) until process 0 has exited.

    Lightning's launcher kills process 0 as soon as it sees one of its processes end with a non-zero
    status; an interrupted process that exited first could cut process 0 off while it writes
    summary.json.
    """
    if received_plan() is None:
        return
    parent = os.getppid()
    deadline = time.monotonic() + PARENT_WAIT_S
    while os.getppid() == parent and time.monotonic() < deadline:
        time.sleep(0.1)
