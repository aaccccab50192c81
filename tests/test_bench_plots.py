"""The benchmarks' plots are legible and share the report's colours: each is rendered from synthetic
rows (every registered attention, lengths 512-16384, a run that stopped at oom) without measuring."""

from __future__ import annotations

import math

import pytest
from matplotlib.colors import to_hex

import attention_zoo
from lra.bench.efficiency import efficiency_figure, stop_note
from lra.bench.efficiency_measure import Measurement, bench_names
from lra.bench.fidelity import fidelity_figure
from lra.bench.fidelity_measure import FidelityRow
from lra.results.plotting import agg_pyplot, attention_color, text_problems

LENGTHS = [512, 1024, 2048, 4096, 8192, 16384]
BUDGETS = [16, 32, 64, 128, 256]


def measurement(name: str, index: int, n: int, scope: str) -> Measurement:
    """Linear cost, quadratic for the naive baseline, which runs out of memory at the longest length of
    the layer and out of time one length earlier in the encoder (then is skipped)."""
    stops = {"layer": (LENGTHS[-1], "oom"), "encoder": (LENGTHS[-2], "timeout")}
    if name == "naive" and n >= stops[scope][0]:
        status = stops[scope][1] if n == stops[scope][0] else "skipped"
        return Measurement(name, n, 1, None, None, status, scope, "stopped")
    power = 2 if name == "naive" else 1
    time_ms = (1 + index) * (n / 512) ** power * (4 if scope == "encoder" else 1)
    return Measurement(name, n, 1, time_ms, 0.5 * time_ms, "ok", scope, timed_steps=5)


def fidelity_rows() -> list[FidelityRow]:
    rows = []
    for index, name in enumerate(attention_zoo.available()):
        spec = attention_zoo.spec(name)
        if spec.approximates is None:
            continue
        budgets = BUDGETS if spec.budget_option else [None]
        for budget in budgets:
            for n in LENGTHS:
                error = (0.2 + 0.1 * index) * (64 / (budget or 64)) ** 0.5 * (n / 512) ** 0.1
                rows.append(
                    FidelityRow(name, spec.approximates, spec.budget_option or "", budget, n, "random",
                                error, 0.1 * error, 6)
                )  # fmt: skip
    rows.append(FidelityRow("nystrom", "standard", "num_landmarks", 16, 512, "random", math.nan, math.nan, 0))
    return rows


def line_colours(fig) -> dict[str, str]:
    """attention name -> the colour of its labelled curves in ``fig``."""
    return {
        line.get_label().split(" ")[0]: to_hex(line.get_color())
        for ax in fig.axes
        for line in ax.get_lines()
        if not line.get_label().startswith("_")
    }


@pytest.fixture
def figures():
    scopes = ("layer", "encoder")
    rows = {
        s: [measurement(a, i, n, s) for i, a in enumerate(bench_names()) for n in LENGTHS] for s in scopes
    }
    made = [
        efficiency_figure(rows, "cpu, batch 1, dim 64, 2 heads, 1 torch thread"),
        fidelity_figure(fidelity_rows(), LENGTHS, BUDGETS, "cpu, 2 heads of dim 32, batch 1, seeds 0,1,2"),
    ]
    yield made
    for fig in made:
        agg_pyplot().close(fig)


def test_benchmark_plots_keep_every_text_inside_and_ticks_apart(figures):
    for fig in figures:
        assert text_problems(fig) == []
    legend = [text.get_text() for text in figures[0].legends[0].get_texts()]
    assert "naive (layer: oom at 16384; encoder: timeout at 8192)" in legend
    assert len(legend) == len(bench_names())


def test_an_attention_has_the_palette_colour_in_both_plots(figures):
    efficiency, fidelity = (line_colours(fig) for fig in figures)
    assert efficiency["nystrom"] == fidelity["nystrom"] == to_hex(attention_color("nystrom"))
    assert all(efficiency[name] == fidelity[name] for name in efficiency.keys() & fidelity.keys())


def test_a_stop_alike_in_every_scope_is_named_once():
    layer = [measurement("naive", 0, n, "layer") for n in LENGTHS]
    assert stop_note(layer) == " (oom at 16384)"
    assert stop_note([measurement("nystrom", 0, n, "layer") for n in LENGTHS]) == ""
