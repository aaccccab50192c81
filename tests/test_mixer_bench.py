"""The benchmarks take the mixers: the efficiency benchmark builds each in place of the whole attention
layer, train-speed times a full training step of each (retrieval's dual encoding included), and the
fidelity benchmark says in one line that they approximate nothing."""

from __future__ import annotations

import argparse
import csv

import pytest

from lra.bench.__main__ import main
from lra.bench.efficiency_measure import BenchConfig, build_layer
from lra.bench.fidelity_measure import measured_cores
from lra.bench.options import add_options
from lra.bench.train_speed import Settings, settings_from


@pytest.mark.slow
def test_efficiency_measures_the_mixers_in_every_scope(tmp_path):
    argv = [
        "efficiency",
        "--attentions",
        "s4d",
        "mamba",
        "--lengths",
        "64",
        "--repeats",
        "1",
        "--warmup",
        "0",
    ]
    argv += ["--scopes", "layer", "encoder", "inference", "--isolation", "inprocess", "--out", str(tmp_path)]
    argv += ["--device", "cpu"]  # where a GPU is present the default is cuda
    assert main(argv) == 0
    for scope in ("", "_encoder", "_inference"):
        with (tmp_path / f"efficiency_cpu{scope}.csv").open() as handle:
            rows = list(csv.DictReader(handle))
        assert [(r["attention"], r["status"]) for r in rows] == [("s4d", "ok"), ("mamba", "ok")]


def test_the_layer_of_a_mixer_is_the_mixer():
    layer = build_layer(BenchConfig("s4d", 32, dim=48, heads=3), "cpu")
    assert type(layer).__name__ == "S4D" and layer.dim == 48


def test_fidelity_leaves_the_mixers_out_in_one_line():
    measured, left_out = measured_cores({}, head_dim=8, heads=2)
    assert "s4d" not in measured and "mamba" not in measured
    lines = [line for line in left_out if "mixers" in line]
    assert lines == [
        "`based`, `deltanet`, `gated_deltanet`, `gla`, `hyena`, `mamba`, `mamba2`, `retnet`, `s4d`: "
        "mixers in place of the whole attention, they approximate nothing"
    ]


def test_train_speed_measures_every_registered_mixer_by_default():
    parser = argparse.ArgumentParser()
    add_options(parser, Settings)
    attentions = settings_from(parser.parse_args(["--device", "cpu"])).attentions
    assert {"s4d", "mamba"} <= set(attentions)


@pytest.mark.slow
def test_train_speed_times_a_training_step_of_each_mixer(tmp_path):
    argv = ["train-speed", "--tasks", "listops", "retrieval", "--attentions", "s4d", "mamba"]
    argv += ["--steps", "1", "--warmup", "1", "--isolation", "inprocess", "--device", "cpu"]
    tiny = ["task.seq_len=32", "task.batch_size=2", "features=8"]
    assert main([*argv, "--overrides", *tiny, "--out", str(tmp_path)]) == 0
    with (tmp_path / "train_speed_cpu.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["task"], r["attention"], r["status"]) for r in rows] == [
        (task, name, "ok") for task in ("listops", "retrieval") for name in ("s4d", "mamba")
    ]
