"""A job its config check refuses leaves nothing behind (lra/results/refused_jobs.py): a single run stops
with one line and exit 1, no folder under outputs/ and no summary.json; a sweep runs its other jobs and
names the one that could not start. Real ``python -m lra`` processes."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.python_m_lra import python_m_lra

pytestmark = pytest.mark.slow

TINY = ["trainer.max_steps=2", "task.eval_every=2", "task.test_examples=32", "logger=none", "num_workers=0"]


@pytest.mark.parametrize(
    ("overrides", "line"),
    [
        (["task=mqar", "attention=nystrom", "model.causal=true"], "'nystrom' has no causal form"),
        (["task=mqar", "task.generator.num_kv_pairs=40"], "num_kv_pairs=40 does not fit input_seq_len=64"),
        (["task=mqar", "task.generator.vocab_size=10"], "vocab_size=10 is too small"),
        (["task=mqar", "attention=performer", "model.position=rope"], "'performer' does not take rotary"),
    ],
)
def test_a_value_error_stops_before_anything_is_written(tmp_path: Path, overrides, line):
    result = python_m_lra(overrides, tmp_path, timeout=120)
    assert result.returncode == 1
    [printed] = result.stderr.strip().splitlines()
    assert printed.startswith("lra: failed: ") and line in printed
    assert not [path for path in (tmp_path / "outputs").rglob("*")]  # no folder under outputs/
    assert not list(tmp_path.rglob("summary.json"))


def test_a_sweep_runs_its_other_jobs_and_names_the_one_that_could_not_start(tmp_path: Path):
    args = ["-m", "task=mqar", "attention=standard,performer", "model.position=rope", *TINY]
    result = python_m_lra(args, tmp_path, timeout=240)
    assert result.returncode == 1
    [summary] = list((tmp_path / "multirun").rglob("summary.json"))
    assert '"status": "completed"' in summary.read_text() and "standard" in summary.parent.name
    named = [line for line in result.stderr.splitlines() if line.startswith("#1 ")]
    assert len(named) == 1 and "attention=performer" in named[0] and "could not start" in named[0]
    assert len([path for path in summary.parent.parent.iterdir() if path.is_dir()]) == 2  # standard's, notes
