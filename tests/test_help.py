"""What ``--help`` prints, written for users: the config groups they pick, and an example per command
of the benchmarks and the report, in plain text."""

from __future__ import annotations

import shlex

import pytest
from conftest import CONF_DIR
from hydra import compose, initialize_config_dir

from lra.bench.__main__ import COMMANDS, EXAMPLES, build_parser
from lra.config.help_groups import derived_groups
from lra.report import cli as report_cli

MARKUP = ("``", ":func:", ":class:", "lra.report.", "lra.bench.")


def lra_help() -> str:
    """``python -m lra --help``'s text: the help template of the composed config, resolved."""
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="config", return_hydra_config=True).hydra.help.template


def test_lra_help_lists_the_groups_a_user_picks_and_leaves_the_derived_ones_to_one_note():
    text = lra_help()
    groups = text.split("== Configuration groups ==\n", 1)[1]
    listing, note = groups.split("\n\n")[1:3]  # after the heading's line: one line per group, then the note
    listed = {line.split(": ", 1)[0] for line in listing.splitlines()}
    derived = {group.split("/", 1)[0] for group in derived_groups()}
    assert derived == {"experiment_attention", "experiment_task", "pretrain_task", "search_space"}
    folders = {path.name for path in CONF_DIR.iterdir() if path.is_dir()}
    assert listed == folders - derived - {"hydra"}
    assert {"task", "attention", "pretrain", "experiment"} <= listed
    assert all(f"{group}/" in note for group in derived)


def test_bench_help_is_plain_text_with_an_example_per_command_that_parses():
    parser = build_parser()
    assert set(EXAMPLES) == set(COMMANDS)
    subparsers = next(action for action in parser._actions if action.dest == "command").choices
    for name, example in EXAMPLES.items():
        argv = shlex.split(example)
        assert argv[:4] == ["python", "-m", "lra.bench", name]
        assert parser.parse_args(argv[3:]).command == name
        assert example in parser.format_help() and example in subparsers[name].format_help()
    for text in (parser.format_help(), *(sub.format_help() for sub in subparsers.values())):
        assert not any(markup in text for markup in MARKUP), text


def test_report_help_is_plain_text_with_examples_that_parse(tmp_path, monkeypatch, capsys):
    (tmp_path / "multirun").mkdir()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        report_cli.parse(["--help"])
    text = capsys.readouterr().out
    assert not any(markup in text for markup in MARKUP), text
    examples = [
        line.split("  ", 2)[1] for line in text.splitlines() if line.startswith("  python -m lra.report")
    ]
    assert len(examples) >= 2
    for example in examples:
        argv = shlex.split(example)
        assert argv[:3] == ["python", "-m", "lra.report"]
        report_cli.parse(argv[3:])
    prose = " ".join(text.split())
    for section in ("locality length", "MQAR table", "MAD's scores", "recall-against-state"):
        assert section in prose
