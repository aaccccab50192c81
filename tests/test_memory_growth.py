"""Memory growth against length: the exponent and its n log n bound, the efficiency page's flag, and
the mixers' memory (the tensors backward keeps) growing no faster than n log n."""

from __future__ import annotations

import pytest
import torch

from attention_zoo.saved_memory import saved_tensor_bytes
from lra.bench.efficiency import growth_table, scope_tables
from lra.bench.efficiency_measure import BenchConfig, Measurement, build_layer
from lra.bench.memory_growth import Growth, growth


def test_exponents_of_linear_and_quadratic_growth_against_n_log_n():
    linear, quadratic = Growth(512, 16384, 1.0, 32.0), Growth(512, 16384, 1.0, 1024.0)
    assert linear.exponent == pytest.approx(1.0) and quadratic.exponent == pytest.approx(2.0)
    assert linear.n_log_n_exponent == pytest.approx(1.127, abs=1e-3)  # log(32 · 14/9) / log 32
    assert linear.within_n_log_n and not quadratic.within_n_log_n


def test_growth_spans_the_shortest_to_the_longest_positive_figure():
    found = growth([(2048, 40.0), (512, 0.0), (1024, 10.0), (4096, 80.0)])
    assert (found.short, found.long, found.first, found.last) == (1024, 4096, 10.0, 80.0)
    assert growth([(512, 3.0)]) is None


def test_the_page_flags_memory_that_grows_faster_than_n_log_n():
    rows = [
        Measurement(name, n, 1, 1.0, memory, "ok")
        for name, power in (("flat", 1), ("square", 2))
        for n in (512, 1024, 2048)
        for memory in [(n / 512) ** power]
    ]
    table = growth_table([*rows, Measurement("broken", 512, 1, None, None, "oom")])
    lines = {line.split("|")[1].strip(): line for line in table.splitlines()[2:]}
    assert "≤ n log n" in lines["flat"] and "faster than n log n" in lines["square"]
    assert "fewer than two lengths" in lines["broken"]


def kept_bytes(name: str, length: int) -> int:
    """Bytes the graph of one layer's forward keeps for backward, inputs and weights left out."""
    torch.manual_seed(0)
    layer = build_layer(BenchConfig(name, length), torch.device("cpu"))
    x = torch.randn(1, length, 64, requires_grad=True)
    return saved_tensor_bytes(lambda: layer(x).sum(), [x, *layer.parameters()])


@pytest.mark.parametrize(
    "name", ["s4d", "mamba", "gla", "retnet", "based", "mamba2", "deltanet", "gated_deltanet", "hyena"]
)
def test_mixer_memory_grows_no_faster_than_n_log_n(name):
    found = growth([(n, kept_bytes(name, n)) for n in (128, 512, 2048)])
    assert found.within_n_log_n, f"{name}: k = {found.exponent:.2f}"


def test_the_check_sees_the_quadratic_memory_of_naive_attention():
    found = growth([(n, kept_bytes("naive", n)) for n in (128, 512, 2048)])
    assert found.exponent > 1.5 and not found.within_n_log_n


def test_the_page_has_a_ratio_table_only_for_the_baselines_measured():
    rows = [Measurement(name, n, 1, 1.0, 1.0, "ok") for name in ("standard", "s4d") for n in (512, 1024)]
    page = scope_tables(rows, [512, 1024], repeats=5)
    assert "Ratio to `standard`" in page and "Ratio to `naive`" not in page
