"""Attentions from other packages (the ``lra.attentions`` entry point group and its Hydra configs), and
in-repository attentions that need no edit of ``attention_zoo/__init__.py``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
from conftest import compose_config, tiny_data_overrides

import attention_zoo
from attention_zoo import plugins
from lra.config.errors import ConfigError
from lra.job.checks import check_config
from lra.model.encoder import LRAClassifier
from lra.model.module import parameter_groups

REPO = Path(__file__).resolve().parent.parent
PLUGIN_PACKAGE = Path(__file__).resolve().parent / "plugin_package"


def write_distribution(site: Path, name: str, entry_points: dict[str, str]) -> None:
    """An installed distribution's metadata in ``site`` (what pip writes), with these entry points."""
    info = site / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    lines = [f"{key} = {value}" for key, value in entry_points.items()]
    (info / "entry_points.txt").write_text("\n".join([f"[{plugins.ENTRY_POINT_GROUP}]", *lines, ""]))


@pytest.fixture
def restore_registry(monkeypatch):
    """Whatever a test registers or imports is gone after it; ``plugins.SKIPPED`` is restored."""
    registered, modules = dict(attention_zoo.registry._REGISTRY), set(sys.modules)
    monkeypatch.setattr(plugins, "SKIPPED", [])
    yield
    attention_zoo.registry._REGISTRY.clear()
    attention_zoo.registry._REGISTRY.update(registered)
    for module in set(sys.modules) - modules:
        del sys.modules[module]


def test_an_entry_point_adds_its_attention_and_its_config(tmp_path, monkeypatch, restore_registry):
    write_distribution(tmp_path, "theirs-attention", {"theirs": "theirs_attention.core"})
    monkeypatch.syspath_prepend(str(PLUGIN_PACKAGE))
    monkeypatch.syspath_prepend(str(tmp_path))
    assert plugins.load_plugins() == []
    assert "theirs" in attention_zoo.available()
    cfg = compose_config(["attention=theirs", "attention.temperature=2.0"])  # the package's conf/attention
    assert (cfg.attention.name, cfg.attention.temperature) == ("theirs", 2.0)
    check_config(cfg)


@pytest.mark.slow  # writes two distributions' metadata and reloads the zoo's plugins
def test_a_broken_or_clashing_entry_point_is_one_line_and_the_others_work(
    tmp_path, monkeypatch, restore_registry, caplog
):
    (tmp_path / "broken_attention.py").write_text("import a_module_that_is_not_installed\n")
    (tmp_path / "clashing_attention.py").write_text(
        "from torch import nn\n"
        "from attention_zoo.registry import register_attention\n"
        "class Core(nn.Module):\n"
        "    def __init__(self, *, head_dim: int, num_heads: int, seq_len: int):\n"
        "        super().__init__()\n"
        "register_attention('clashing_extra')(Core)\n"
        "register_attention('standard')(Core)\n"
    )
    write_distribution(
        tmp_path, "bad-attentions", {"broken": "broken_attention", "clashing": "clashing_attention"}
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    before = attention_zoo.available()
    skipped = plugins.load_plugins()
    assert skipped == [
        "lra.attentions entry point 'broken = broken_attention' of package bad-attentions 0.1 was skipped: "
        "ModuleNotFoundError: No module named 'a_module_that_is_not_installed'",
        "lra.attentions entry point 'clashing = clashing_attention' of package bad-attentions 0.1 was "
        "skipped: ValueError: attention 'standard' is registered twice",
    ]
    assert [record.getMessage() for record in caplog.records] == skipped
    assert attention_zoo.available() == before  # 'clashing_extra' was rolled back with its entry point
    assert attention_zoo.spec("standard").cls.__module__ == "attention_zoo.cores.standard"
    for name in before:
        check_config(compose_config([f"attention={name}"]))
    with pytest.raises(ConfigError, match=r"^attention.name='broken' is not registered; .*No module named"):
        check_config(compose_config(["attention.name=broken"]))


def test_an_entry_point_adds_a_mixer_with_its_own_optimiser_settings(tmp_path, monkeypatch, restore_registry):
    (tmp_path / "their_mixer.py").write_text(
        "import torch\n"
        "from torch import nn\n"
        "from attention_zoo.registry import PositiveInt, register_mixer\n"
        "@register_mixer('their_mixer', budget_option='width')\n"
        "class Mixer(nn.Module):\n"
        "    def __init__(self, *, dim: int, seq_len: int, width: PositiveInt = 3):\n"
        "        super().__init__()\n"
        "        self.scale = nn.Parameter(torch.ones(dim))\n"
        "        self.scale._optim = {'lr': 0.5, 'weight_decay': 0.0}\n"
        "    def forward(self, x, mask=None):\n"
        "        return x * self.scale\n"
    )
    write_distribution(tmp_path, "their-mixer", {"their_mixer": "their_mixer"})
    monkeypatch.syspath_prepend(str(tmp_path))
    assert plugins.load_plugins() == []
    factory = partial(attention_zoo.build_attention, "their_mixer")
    model = LRAClassifier(vocab_size=5, num_classes=2, seq_len=8, attention=factory, dim=16)
    assert all(type(block.attention).__name__ == "Mixer" for block in model.encoder.blocks)
    declared = parameter_groups(model)[1]
    assert (declared["lr"], declared["weight_decay"], len(declared["params"])) == (0.5, 0.0, 2)


@pytest.mark.slow  # pip installs the package, then python -m lra runs it
def test_pip_installed_package_runs_with_python_m_lra(data_root, tmp_path):
    source, site = tmp_path / "source", tmp_path / "site"
    shutil.copytree(PLUGIN_PACKAGE, source)
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
    subprocess.run([*pip, "--target", str(site), str(source)], check=True, capture_output=True, timeout=120)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)]), "OMP_NUM_THREADS": "1"}

    def python(*args: str) -> subprocess.CompletedProcess:
        command = [sys.executable, *args]
        return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)

    listed = python("-c", "import attention_zoo; print(' '.join(attention_zoo.available()))")
    assert "theirs" in listed.stdout.split() and "nystrom" in listed.stdout.split(), listed.stderr
    run_dir = tmp_path / "run"
    overrides = ["attention=theirs", "attention.temperature=2.0", *tiny_data_overrides(data_root)]
    result = python("-m", "lra", *overrides, f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "completed"
    assert summary["config"]["attention"] == {
        "_target_": "attention_zoo.build_attention",
        "_partial_": True,
        "name": "theirs",
        "temperature": 2.0,
    }


@pytest.mark.slow  # imports torch in a subprocess
def test_a_new_module_in_attention_zoo_registers_without_an_edit_of_init(tmp_path):
    zoo = tmp_path / "attention_zoo"
    shutil.copytree(REPO / "attention_zoo", zoo, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PLUGIN_PACKAGE / "theirs_attention" / "core.py", zoo / "mine.py")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    command = [sys.executable, "-c", "import attention_zoo; print(' '.join(attention_zoo.available()))"]
    listed = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert "theirs" in listed.stdout.split(), listed.stderr
