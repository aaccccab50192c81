"""``experiment=locality``: the windows it sweeps for a task's length, and the conditional sweeper that
runs ``standard`` once a seed beside every window."""

from __future__ import annotations

import pytest
from conftest import CONF_DIR
from hydra import compose, initialize_config_dir
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

from hydra_plugins.lra_conditional_sweeper import conditional_batches
from lra.job.resolvers import locality_windows


@pytest.mark.parametrize(
    "seq_len, cls_token, top",
    [(64, False, 128), (512, False, 1024), (2000, False, 4096), (64, True, 128), (65, True, 256)],
)
def test_the_windows_double_from_8_to_the_first_that_covers_every_key(seq_len, cls_token, top):
    windows = [int(w) for w in locality_windows(seq_len, cls_token).split(",")]
    assert windows[0] == 8 and windows[-1] == top
    assert all(b == 2 * a for a, b in zip(windows, windows[1:], strict=False))
    positions = seq_len + cls_token
    assert top // 2 >= positions - 1 > top // 4  # the top sees every key, the one below does not


def jobs(arguments: list[str], only_with: dict[str, str]) -> list[list[str]]:
    (batch,) = conditional_batches(OverridesParser.create().parse_overrides(arguments), only_with, None)
    return batch


def test_standard_runs_once_a_seed_beside_every_window():
    found = jobs(
        ["attention=window,standard", "attention.window=8,16", "seed=0,1"],
        {"attention.window": "attention=window"},
    )
    assert found == [
        ["attention=window", "attention.window=8", "seed=0"],
        ["attention=window", "attention.window=8", "seed=1"],
        ["attention=window", "attention.window=16", "seed=0"],
        ["attention=window", "attention.window=16", "seed=1"],
        ["attention=standard", "seed=0"],
        ["attention=standard", "seed=1"],
    ]
    assert len(jobs(["attention=window,standard", "attention.window=8,16", "seed=0,1"], {})) == 8


def test_batches_keep_the_order_and_their_size():
    arguments = ["attention=window,standard", "attention.window=8,16"]
    overrides = OverridesParser.create().parse_overrides(arguments)
    batches = conditional_batches(overrides, {"attention.window": "attention=window"}, 2)
    assert batches == [
        [["attention=window", "attention.window=8"], ["attention=window", "attention.window=16"]],
        [["attention=standard"]],
    ]


@pytest.mark.parametrize(
    "overrides, windows",
    [
        (["experiment=locality", "task=listops"], locality_windows(2000)),
        (["experiment=locality", "task=text", "task.seq_len=512"], "8,16,32,64,128,256,512,1024"),
        (["experiment=locality_demo"], "8,16,32,64,128"),
    ],
)
def test_the_preset_sweeps_window_beside_standard_for_its_length(overrides, windows):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
    sweeper = OmegaConf.to_container(cfg.hydra.sweeper, resolve=True)
    assert sweeper["_target_"].endswith("ConditionalSweeper")
    assert sweeper["params"] == {"attention": "window,standard", "attention.window": windows}
    assert sweeper["only_with"] == {"attention.window": "attention=window"}
    assert cfg.attention.name == "window"  # a single run: the window at its default
