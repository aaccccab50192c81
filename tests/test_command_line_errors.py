"""A typo on the command line is one line with a suggestion: group options, keys, shortcuts, folders."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CONF_DIR, compose_config
from helpers.python_m_lra import python_m_lra
from hydra import compose, initialize_config_dir

from lra.config.errors import ConfigError, OutputFolderError
from lra.config.hydra_errors import error_line
from lra.config.paths import writable_folder
from lra.job.checks import check_config


def composition_line(overrides: list[str]) -> str:
    """The line ``python -m lra OVERRIDES`` prints for the error Hydra raises while composing."""
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        with pytest.raises(Exception) as raised:
            compose(config_name="config", overrides=overrides)
        line = error_line(raised.value, overrides)  # inside: the config repository is still there
    assert line is not None, raised.value
    assert "\n" not in line
    return line


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        (
            "task=listop",
            "task=listop is not an option of task; valid: compression, fuzzy_in_context_recall, image, "
            "in_context_recall, induction, listops, memorization, mqar, noisy_in_context_recall, pathfinder, "
            "pathx, retrieval, selective_copying, text (did you mean task=listops?)",
        ),
        ("attention=nystrm", "(did you mean attention=nystrom?)"),
        ("trainer.max_step=20", "trainer.max_step is not a config key; did you mean trainer.max_steps?"),
        ("atention=nystrom", "atention is not a config key; did you mean attention?"),
        ("seeds=3", "did you mean seed?"),
        ("trainer.speed=3", "trainer.speed is not a config key; the keys of trainer: accelerator, "),
        ("task=mqar task.num_kv_pairs=4",
         "task.num_kv_pairs is not a config key; did you mean task.generator.num_kv_pairs?"),
    ],
)  # fmt: skip
def test_a_typo_is_one_line_with_the_nearest_names(override, expected):
    line = composition_line(override.split())
    assert expected in line
    assert "search path" not in line and "+" not in line  # no noise, never "+key" for a misspelt key


def test_an_override_that_does_not_parse_names_it():
    assert composition_line(["task=[a"]).startswith("cannot parse 'task=[a': ")


def test_an_unwritable_folder_names_the_key_that_moves_it(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    error = NotADirectoryError(20, "Not a directory", str(blocker / "x"))
    assert error_line(error, ["-m"]) == (
        f"cannot write to {blocker / 'x'}: Not a directory; choose another folder with hydra.sweep.dir=PATH"
    )
    assert error_line(error, []).endswith("hydra.run.dir=PATH")
    with pytest.raises(OutputFolderError, match=r"^cannot write to .*a-file/out: .*with --out$"):
        writable_folder(blocker / "out", "--out")
    assert writable_folder(tmp_path / "new" / "out", "--out").is_dir()


def test_an_error_caused_by_a_shortcut_names_it():
    with pytest.raises(ConfigError) as raised:
        check_config(compose_config(["experiment=demo", "features=128"]))
    assert str(raised.value).startswith(
        "features=128 sets attention.num_landmarks=128, which exceeds task.seq_len=64"
    )
    typed = compose_config(["experiment=demo", "features=8", "attention.num_landmarks=100"])
    with pytest.raises(ConfigError, match=r"^attention.num_landmarks=100 exceeds task.seq_len=64"):
        check_config(typed)


def lra_error(args: list[str], cwd: Path) -> str:
    """The stderr of ``python -m lra ARGS``, which must fail."""
    result = python_m_lra(args, cwd, timeout=120)
    assert result.returncode == 1
    return result.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["task=listop"], "lra: task=listop is not an option of task; valid: "),
        (
            ["trainer.max_step=20"],
            "lra: trainer.max_step is not a config key; did you mean trainer.max_steps?",
        ),
        (
            ["hydra.run.dir=a-file/x"],
            "lra: cannot write to a-file/x: Not a directory; choose another folder ",
        ),
        (["-m", "hydra.sweep.dir=a-file/x"], "with hydra.sweep.dir=PATH"),
        (  # a key of the swept entries, not of the default one
            ["-m", "attention=gla,retnet", "attention.use_short_conv=true"],
            "(attention is swept here, and Hydra checks a key against the default attention before the "
            "sweep: ++attention.use_short_conv=VALUE sets it in every job)",
        ),
    ],
)
def test_python_m_lra_prints_one_line(args, expected, tmp_path):
    (tmp_path / "a-file").write_text("")
    stderr = lra_error(args, tmp_path)
    assert stderr.count("\n") == 1 and expected in stderr, stderr


def test_a_trainer_key_added_with_plus_must_be_a_trainer_argument():
    with pytest.raises(ConfigError) as raised:
        check_config(compose_config(["+trainer.max_step=20"]))
    assert (
        str(raised.value)
        == "trainer.max_step is not an argument of Lightning's Trainer; did you mean trainer.max_steps?"
    )


def test_a_sweep_asked_for_its_config_is_one_line(tmp_path):
    result = python_m_lra(["-m", "task=listops", "--cfg", "job"], tmp_path, timeout=120)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        "lra: Only one of --run, --multirun, --cfg, --info and --shell_completion can be specified: --cfg "
        "shows one job's config, so leave out -m (python -m lra ... --cfg job)"
    ]
