"""``python -m lra.bench compare`` on tiny sizes: the authors' code loaded from a checkout (a stand-in
one here), a row per core and length, the report's provenance, unusable cores skipped."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lra.bench.__main__ import main

TINY = ["--lengths", "64", "--batch", "1", "--rounds", "2", "--warmup", "1"]

# A stand-in for the Skyformer checkout's src/models/attention_nystrom.py: their calling convention
# (a config dict; q, k, v and a float mask), plain softmax attention inside.
STAND_IN = """
import torch

class NystromAttention(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        self.scale = config["head_dim"] ** -0.5

    def forward(self, Q, K, V, mask):
        scores = Q @ K.transpose(-1, -2) * self.scale - 1e9 * (1 - mask[:, None, None, :])
        return torch.softmax(scores, dim=-1) @ V
"""


@pytest.fixture
def stand_in_checkout(tmp_path, monkeypatch):
    models = tmp_path / "src" / "models"
    models.mkdir(parents=True)
    (models / "__init__.py").write_text("")
    (models / "attention_nystrom.py").write_text(STAND_IN)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield tmp_path
    for name in [name for name in sys.modules if name == "models" or name.startswith("models.")]:
        del sys.modules[name]


def test_against_authors_loads_their_code_and_skips_what_cannot_be_compared(stand_in_checkout, tmp_path):
    cores = ["nystrom", "performer", "no_such_core"]
    checkout = ["--authors-code", str(stand_in_checkout)]
    argv = ["compare", "--against", "authors", *checkout, "--cores", *cores, *TINY, "--out", str(tmp_path)]
    assert main(argv) == 0
    report = (tmp_path / "compare_authors_cpu.md").read_text()
    assert "| nystrom | 64 |" in report
    assert "- skipped performer: ValueError: " in report and "has no models.attention_performer" in report
    assert "- skipped no_such_core: not a registered attention here" in report
    assert "- command: `python -m lra.bench compare --against authors" in report
    assert "load average" in report and f"- authors' code: {stand_in_checkout}" in report
    assert "Allocator: glibc's default" in report and "page faults per step" in report
    rows = (tmp_path / "compare_authors_cpu.csv").read_text().splitlines()
    assert rows[0].startswith("label,length,ours_median_ms") and len(rows) == 2


def test_against_authors_needs_a_checkout(tmp_path):
    out = ["--out", str(tmp_path)]
    with pytest.raises(SystemExit):
        main(["compare", "--against", "authors", *TINY, *out])
    with pytest.raises(SystemExit):
        main(["compare", "--against", "authors", "--authors-code", str(tmp_path / "missing"), *TINY, *out])


FAULTS_OF_A_NEW_BUFFER = """
import sys, torch
from lra.job.memory import keep_freed_heap, minor_page_faults
if sys.argv[1] == "steady":
    keep_freed_heap()
for _ in range(3):
    before = minor_page_faults()
    torch.ones(2**24).sum()  # 64 MiB, freed at once
print(minor_page_faults() - before)
"""


@pytest.mark.slow  # two fresh interpreters
def test_steady_heap_reuses_freed_buffers_without_page_faults():
    """glibc by default unmaps a freed 64 MiB buffer, so the next one faults in all 16384 of its pages."""
    faults = {
        setting: int(
            subprocess.run(
                [sys.executable, "-c", FAULTS_OF_A_NEW_BUFFER, setting],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        for setting in ("default", "steady")
    }
    assert faults["default"] >= 16384 and faults["steady"] < 1000, faults


@pytest.mark.slow  # python -m lra.bench compare in a subprocess
def test_steady_heap_run_writes_its_own_page(stand_in_checkout, tmp_path):
    argv = ["-m", "lra.bench", "compare", "--against", "authors", "--authors-code", str(stand_in_checkout)]
    argv += ["--cores", "nystrom", *TINY, "--steady-heap", "--out", str(tmp_path)]
    subprocess.run([sys.executable, *argv], check=True)
    report = (tmp_path / "compare_authors_steady_heap_cpu.md").read_text()
    assert "Allocator: steady heap" in report and "| nystrom | 64 |" in report
