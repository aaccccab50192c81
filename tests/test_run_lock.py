"""One writer per run folder (``lra.job.run_lock``): the lock itself, a holder in another process killed with
SIGKILL (no stale lock), and two ``python -m lra`` writing one folder at once."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import tiny_data_overrides
from test_resume import REPO

from lra.config.errors import RunFolderBusy
from lra.job.run_lock import LOCK_FILE, RunLock

HOLD = """
import sys, time
from pathlib import Path
from lra.job.run_lock import RunLock
RunLock.acquire(Path(sys.argv[1]))
print("held", flush=True)
time.sleep(60)
"""


def locked(folder: Path) -> bool:
    """Whether some process holds ``folder``'s lock (asked by one that holds none there)."""
    try:
        handle = os.open(folder / LOCK_FILE, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(handle)
    return False


def test_a_second_lock_on_a_run_folder_is_refused_naming_the_holder(tmp_path):
    folder = tmp_path / "run"
    first = RunLock.acquire(folder)
    assert locked(folder)
    with pytest.raises(RunFolderBusy) as refused:
        RunLock.acquire(folder)
    message = str(refused.value)
    assert "\n" not in message
    assert (
        f"the run folder {folder} is in use by pid {os.getpid()} on host {socket.gethostname()} since"
        in message
    )
    assert message.endswith("wait for it to end (or stop it), then resume=auto")
    first.release()
    assert not locked(folder)
    RunLock.acquire(folder).release()
    assert (folder / LOCK_FILE).is_file()  # the file stays; only the lock goes


def test_a_holder_killed_with_sigkill_leaves_no_stale_lock(tmp_path):
    folder = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder)], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunFolderBusy, match=f"in use by pid {holder.pid} on host {socket.gethostname()}"):
            RunLock.acquire(folder)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    RunLock.acquire(folder).release()


def test_a_forked_child_does_not_keep_the_lock_of_its_parent(tmp_path):
    folder = tmp_path / "run"
    lock = RunLock.acquire(folder)
    ready, started = os.pipe()
    child = os.fork()  # as a data loader worker is started
    if child == 0:  # the fork hooks have run when os.fork returns here
        os.write(started, b"x")
        time.sleep(30)
        os._exit(0)
    try:
        assert os.read(ready, 1) == b"x"
        lock.release()
        RunLock.acquire(folder).release()  # the child's copy of the file holds nothing
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)


def lra_run(folder: Path, data_root: Path, cwd: Path, *extra: str) -> subprocess.Popen:
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")]),
        "HYDRA_FULL_ERROR": "0",
    }
    args = [
        "attention=standard",
        *tiny_data_overrides(data_root, "trainer.max_steps=8"),
        f"hydra.run.dir={folder}",
    ]
    command = [sys.executable, "-m", "lra", *args, *extra]
    return subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.mark.slow  # two python -m lra at once
def test_two_runs_into_one_folder_one_writes_the_other_stops_with_one_line(data_root, tmp_path):
    folder, go = tmp_path / "run", tmp_path / "go"
    wait = ["+callbacks.wait._target_=helpers.wait_for_file.WaitForFile", f"+callbacks.wait.path={go}"]
    first = lra_run(folder, data_root, tmp_path, *wait)  # holds its lock until ``go`` exists
    try:
        deadline = time.monotonic() + 120
        while not locked(folder):
            assert first.poll() is None and time.monotonic() < deadline, first.communicate()
            time.sleep(0.05)
        second = lra_run(folder, data_root, tmp_path)
        _, second_err = second.communicate(timeout=240)
    finally:
        go.touch()
    _, first_err = first.communicate(timeout=240)
    assert first.returncode == 0, first_err[-2000:]
    assert second.returncode == 1
    since = (folder / LOCK_FILE).read_text().split(" since ")[1].strip()
    assert second_err.strip().splitlines()[-1] == (
        f"lra: failed: the run folder {folder} is in use by pid {first.pid} on host {socket.gethostname()} "
        f"since {since}: one process writes a run folder at a time; wait for it to end (or stop it), "
        "then resume=auto"
    )
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["metrics"]["train/steps"] == 8
