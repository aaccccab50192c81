"""Optional parts fail in one line: a command that needs an extra that is not installed names the extra
and its install command, before Hydra starts, without a traceback. A missing package is simulated with
``sys.modules[name] = None``, which makes its import fail."""

from __future__ import annotations

import subprocess
import sys

import pytest
from test_resume import REPO

from lra.config.errors import ConfigError
from lra.config.extras import check_command_line

SUBMITIT, JOBLIB = "hydra_plugins.hydra_submitit_launcher", "hydra_plugins.hydra_joblib_launcher"
# (command-line words, the module that goes missing, the extra that the message names)
CASES = [
    (["-m", "hparams_search=lra", "experiment=demo"], "optuna", "search"),
    (["-m", "hydra/sweeper=lra_optuna"], "optuna", "search"),
    (["-m", "hydra/launcher=slurm", "seed=0,1"], SUBMITIT, "cluster"),
    (["-m", "hydra/launcher=submitit_local"], SUBMITIT, "cluster"),
    (
        ["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2"],
        "hydra_plugins.hydra_joblib_launcher",
        "cluster",
    ),
]


@pytest.mark.parametrize(("argv", "module", "extra"), CASES)
def test_a_command_that_needs_a_missing_extra_names_its_install_command(argv, module, extra, monkeypatch):
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ConfigError) as refused:
        check_command_line(argv)
    message = str(refused.value)
    assert message == (
        f"{argv[1]} needs the `{extra}` extra ({module} is not installed): "
        f'pip install -e ".[{extra}]" (or make install)'
    )


def test_commands_without_an_optional_part_need_no_extra(monkeypatch):
    for module in ("optuna", SUBMITIT, JOBLIB):
        monkeypatch.setitem(sys.modules, module, None)
    check_command_line(["task=listops", "attention=nystrom", "-m", "seed=0,1", "--cfg", "job"])
    check_command_line(["hydra/launcher=local", "hparams_search=null", "logger=csv", "~hparams_search"])


@pytest.mark.slow  # python -m lra in subprocesses
@pytest.mark.parametrize(("argv", "module", "extra"), [CASES[0], CASES[2], CASES[4]])
def test_python_m_lra_without_an_extra_ends_in_one_line(argv, module, extra, tmp_path):
    hide = f"import sys, runpy; sys.modules[{module!r}] = None; sys.argv = ['lra', *{argv!r}]; "
    run = f"{hide}runpy.run_module('lra', run_name='__main__', alter_sys=True)"
    result = subprocess.run(
        [sys.executable, "-c", run],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 1 and result.stderr.splitlines() == [
        f"lra: {argv[1]} needs the `{extra}` extra ({module} is not installed): "
        f'pip install -e ".[{extra}]" (or make install)'
    ]
