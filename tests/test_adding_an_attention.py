"""Adding an attention as docs/attentions.md says: the code blocks of its section "Adding an attention
core", taken from the page itself so that the page cannot drift, give a core that the registry, the
config tree, the shared property tests and a training run all take up."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

import attention_zoo
from attention_zoo import registry

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "adding-an-attention.md"
SECTION = "## Adding an attention core"
FENCED = re.compile(r"^( *)```(\w+)\n(.*?)^\1```$", re.MULTILINE | re.DOTALL)
# What a copy of the repository needs to run its tests (the rest: results, docs, data, outputs).
TREE = ("attention_zoo", "conf", "data_prep", "hydra_plugins", "lra", "tests", "pyproject.toml")
# The test modules whose tests run on every registered core (parametrized by attention_zoo.available(),
# or looping over it: the -k expression below selects those).
SHARED_TESTS = ("attention_properties", "configs", "harness", "pretraining", "plotting", "bench_plots")


def section_blocks() -> dict[str, str]:
    """The section's fenced code blocks by language (``python``, ``yaml``, ``bash``), dedented."""
    section = PAGE.read_text().split(f"\n{SECTION}\n", 1)[1].split("\n## ", 1)[0]
    blocks = {language: textwrap.dedent(body) for _, language, body in FENCED.findall(section)}
    assert set(blocks) == {"python", "yaml", "bash"}, f"{PAGE.name} § {SECTION}: {sorted(blocks)}"
    return blocks


def read_config(text: str) -> dict:
    return OmegaConf.to_container(OmegaConf.create(text))


@pytest.fixture
def template_core():
    """The page's core, registered for this test only (as importing attention_zoo/cores/<name>.py would)."""
    blocks, before = section_blocks(), dict(registry._REGISTRY)
    source = compile(blocks["python"], "attention_zoo/cores/mine.py", "exec")
    exec(source, {"__name__": "attention_zoo.cores.mine"})
    config = read_config(blocks["yaml"])
    yield config["name"], config
    registry._REGISTRY.clear()
    registry._REGISTRY.update(before)


def test_the_template_is_softmax_attention_and_its_config_states_its_options(template_core):
    name, config = template_core
    assert {key: config.pop(key) for key in ("_target_", "_partial_", "name")} == {
        "_target_": "attention_zoo.build_attention", "_partial_": True, "name": name
    }  # fmt: skip
    assert config == attention_zoo.spec(name).options
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(3, 2, 40, 16, generator=gen) for _ in range(3))
    mask = torch.arange(40)[None, :] < torch.tensor([40, 23, 0])[:, None]  # full, padded, fully padded
    shapes = {"head_dim": 16, "num_heads": 2, "seq_len": 40}
    ours = attention_zoo.build_attention(name, **shapes)(q, k, v, mask)
    reference = attention_zoo.build_attention("standard", **shapes)(q, k, v, mask)
    real = mask[:, None, :, None]
    torch.testing.assert_close(ours * real, reference * real, atol=1e-5, rtol=1e-5)
    assert torch.isfinite(ours).all()
    with pytest.raises(ValueError, match="temperature must be a number > 0"):
        attention_zoo.build_attention(name, **shapes, temperature=0)


@pytest.mark.slow  # copies the repository, runs pytest and the first command in subprocesses
def test_an_attention_added_as_the_page_says_passes_the_shared_tests_and_runs(tmp_path):
    blocks = section_blocks()
    name = read_config(blocks["yaml"])["name"]
    copy = tmp_path / "repo"
    for entry in TREE:
        source, target = REPO / entry, copy / entry
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, target)
    (copy / "attention_zoo" / "cores" / f"{name}.py").write_text(blocks["python"])
    (copy / "conf" / "attention" / f"{name}.yaml").write_text(blocks["yaml"])
    env = {**os.environ, "PYTHONPATH": str(copy), "OMP_NUM_THREADS": "1"}

    def python(*args: str) -> subprocess.CompletedProcess:
        command = [sys.executable, *args]
        return subprocess.run(command, cwd=copy, env=env, capture_output=True, text=True, timeout=600)

    selected = f"{name} or registered or benchmark_plots"
    # One process (-n 0): the suite around this test already has a worker on every core.
    pytest_args = ["-v", "-n", "0", "-p", "no:randomly", "-p", "no:cacheprovider", "-k", selected]
    tested = python("-m", "pytest", *pytest_args, *(f"tests/test_{module}.py" for module in SHARED_TESTS))
    assert tested.returncode == 0, tested.stdout[-3000:]
    passed = re.findall(r"^(\S+) PASSED", tested.stdout, re.MULTILINE)
    assert "tests/test_configs.py::test_one_attention_config_per_registered_core" in passed
    assert len([test for test in passed if re.search(rf"[\[-]{name}[\]-]", test)]) >= 15, passed

    linted = python("-m", "ruff", "check", f"attention_zoo/cores/{name}.py")
    assert linted.returncode == 0, linted.stdout  # make lint stays green
    first_command = shlex.split(blocks["bash"].strip())
    assert first_command[:3] == ["python", "-m", "lra"] and f"attention={name}" in first_command
    quick = ["trainer.max_steps=2", "logger=csv", f"data_root={tmp_path / 'data'}"]
    trained = python(*first_command[1:], *quick, f"hydra.run.dir={tmp_path / 'run'}")
    assert trained.returncode == 0, trained.stderr[-3000:]
    assert "completed" in trained.stdout + trained.stderr
