"""How each process takes SIGTERM and SIGINT (``lra.config.stop_signals``): a job's handlers inside its
sweep's, loader workers that leave a signal to the process that trains (``lra.data.workers``), and what
a stopped sweep prints (``lra.job.sweep_stop``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import lightning as L
import pytest
from torch.utils.data import Dataset

from lra.config.stop_signals import NotedStop, current_note, noting
from lra.data.workers import worker_loader
from lra.job.agreed_stop import StopFlag
from lra.job.sweep_stop import continue_command, job_labels


def trainer() -> L.Trainer:
    return L.Trainer(logger=False, enable_progress_bar=False, enable_model_summary=False)


def test_a_jobs_handlers_pass_each_signal_to_the_sweeps_and_start_from_what_it_noted():
    with noting(NotedStop()) as sweep:
        sweep.note(signal.SIGINT, None)  # during the job's setup
        flag = StopFlag(trainer())
        flag.register_signal_handlers()
        try:
            assert flag.noted == signal.SIGINT and flag.outer is sweep
            assert current_note() is flag
            flag.note(signal.SIGTERM, None)
            assert sweep.noted == flag.noted == signal.SIGTERM
            with pytest.raises(KeyboardInterrupt):  # Ctrl+C twice
                flag.note(signal.SIGINT, None)
        finally:
            flag.teardown()
        assert current_note() is sweep


def test_a_flag_left_in_place_after_its_stop_is_not_taken_for_a_sweep():
    """After an agreed stop a flag's handlers stay (a later SIGTERM must not cut the exit short); the
    next job's flag starts from what the sweep noted, not from that stop."""
    with noting(NotedStop()) as sweep:
        stopped = StopFlag(trainer())
        stopped.register_signal_handlers()
        stopped.note(signal.SIGTERM, None)
        stopped.agreed = signal.SIGTERM
        stopped.teardown()
        assert current_note() is stopped
        sweep.noted = 0  # (as a new sweep in this process)
        flag = StopFlag(trainer())
        flag.register_signal_handlers()
        assert flag.outer is sweep and flag.noted == 0
        flag.teardown()


class WorkerPids(Dataset):
    """Each example: the pid of the worker process that loads it."""

    def __len__(self) -> int:
        return 10_000

    def __getitem__(self, index: int) -> int:
        return os.getpid()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return open(f"/proc/{pid}/stat").read().split()[2] != "Z"


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_a_loader_worker_ignores_a_signal_from_others_and_ends_on_one_from_the_trainer():
    batches = iter(worker_loader(WorkerPids(), num_workers=1, batch_size=2, persistent_workers=True))
    (worker,) = set(next(batches).tolist())
    for name in ("SIGTERM", "SIGINT"):  # from another process, as a scheduler or a terminal sends them
        kill = f"import os, signal; os.kill({worker}, signal.{name})"
        subprocess.run([sys.executable, "-c", kill], check=True)
    time.sleep(0.5)
    assert alive(worker) and set(next(batches).tolist()) == {worker}  # it still serves batches
    os.kill(worker, signal.SIGTERM)  # from the process that trains: torch's and multiprocessing's terminate
    deadline = time.monotonic() + 30
    while alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(worker)
    del batches


def test_a_stopped_sweep_names_its_jobs_by_what_differs_and_continues_with_resume_auto():
    jobs = [["seed=0", "task=listops", "hydra.x=1"], ["seed=1", "task=listops", "hydra.x=2"]]
    assert job_labels(jobs) == ["seed=0", "seed=1"]
    assert job_labels([["seed=0"]]) == [""]
    arguments = ["-m", "seed=0,1", "resume=null", "data_root=/my data"]
    assert continue_command(arguments) == "python -m lra -m seed=0,1 'data_root=/my data' resume=auto"
