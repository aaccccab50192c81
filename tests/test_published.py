"""The papers' numbers in ``lra.results.published_numbers``: every row of the tables the report and the
benchmarks put ours beside, and the checks the papers' own figures allow."""

from __future__ import annotations

import statistics
from itertools import pairwise

import pytest

import attention_zoo
from lra.results.published_costs import LAYER_COST, LAYER_COST_LENGTHS, RUN_COST
from lra.results.published_numbers import (
    ACCURACY,
    AMOS_SPT_ACCURACY,
    LRA_ACCURACY,
    SKYFORMER_ACCURACY,
    SSM_ACCURACY,
    TASKS,
)

SKYFORMER_ROWS = set(
    "standard kernelized nystrom linformer informer performer reformer bigbird skyformer".split()
)


@pytest.mark.parametrize("table", ACCURACY, ids=lambda table: table.paper)
def test_each_printed_average_is_the_mean_of_its_five_cells(table):
    assert set(table.averages) == set(table.rows)
    for attention, accuracy in table.rows.items():
        assert len(accuracy) == len(TASKS)
        assert table.averages[attention] == pytest.approx(statistics.fmean(accuracy), abs=0.01), attention


def test_amos_rows_from_scratch_causal_and_masked_each_name_their_table_and_average_as_printed():
    table = AMOS_SPT_ACCURACY
    assert table.columns == (*TASKS, "pathx") and table.attention in attention_zoo.available()
    assert [row.objective for row in table.rows] == [None, "causal", "masked"]
    assert all("Table 1" in row.source for row in table.rows)
    for row in table.rows:
        if row.accuracy is None:  # a row carried without figures has no average either
            assert row.average is None
            continue
        cells = [table.chance if accuracy is None else accuracy for accuracy in row.accuracy]
        assert row.average == pytest.approx(statistics.fmean(cells), abs=0.01)
    assert table.row(None).accuracy[: len(TASKS)] == LRA_ACCURACY.rows["standard"]
    assert table.row(None).accuracy[-1] is None and table.row("causal").accuracy[3] == 76.0


@pytest.mark.parametrize("table", [*ACCURACY, AMOS_SPT_ACCURACY], ids=lambda table: table.paper)
def test_every_published_table_states_its_protocol_and_what_of_ours_compares(table):
    assert table.protocol and (table.size is not None or table.preset is not None)


def test_skyformer_tables_have_all_nine_rows_with_hours_and_memory_for_every_task():
    assert set(SKYFORMER_ACCURACY.rows) == SKYFORMER_ROWS
    assert {cost.attention for cost in RUN_COST} == SKYFORMER_ROWS
    for cost in RUN_COST:
        assert set(cost.hours) == set(cost.peak_gb) == set(TASKS), cost.attention
    standard = next(cost for cost in RUN_COST if cost.attention == "standard")
    assert standard.hours["text"] == 4.30 and standard.peak_gb["image"] == 11.47  # the paper's first / last


def test_nystromformer_table1_has_five_rows_at_five_lengths():
    """The ×-factors the paper prints beside each cell are ratios to the Transformer cell at the same n:
    the page derives them from the cells (``efficiency_paper.layout_table``) instead of storing them."""
    labels = ["Transformer", "Linformer-256", "Longformer-257", "Nyströmformer-64", "Nyströmformer-32"]
    assert list(dict.fromkeys(cell.label for cell in LAYER_COST)) == labels
    for label in labels:
        row = [cell for cell in LAYER_COST if cell.label == label]
        assert [cell.seq_len for cell in row] == list(LAYER_COST_LENGTHS)
        # one layer's memory and time grow with the length in every row (a mis-copied cell would show)
        assert all(a.memory_mb < b.memory_mb and a.time_ms <= b.time_ms for a, b in pairwise(row))
    transformer = {cell.seq_len: cell for cell in LAYER_COST if cell.label == "Transformer"}
    assert all(transformer[cell.seq_len].memory_mb >= cell.memory_mb for cell in LAYER_COST)


def test_published_rows_are_registered_attention_names_with_their_options():
    names = set(attention_zoo.available())
    published = {a for table in ACCURACY for a in table.rows} | {c.attention for c in RUN_COST}
    assert published | {cell.attention for cell in LAYER_COST} <= names
    for cell in LAYER_COST:
        assert set(cell.options) <= set(attention_zoo.spec(cell.attention).options), cell.label


@pytest.mark.parametrize("row", SSM_ACCURACY, ids=lambda row: row.model)
def test_each_ssm_average_is_the_mean_of_its_six_cells_and_names_its_table(row):
    assert row.columns == (*TASKS, "pathx") and len(row.accuracies) == len(row.columns)
    assert None not in row.accuracies  # every cell was read; a cell not verified would be None
    assert row.average == pytest.approx(statistics.fmean(row.accuracies), abs=0.01), row.model
    assert "Table" in row.paper or "LRA table" in row.paper


def test_the_ssm_rows_are_the_issues_models_with_its_averages():
    averages = {row.model: row.average for row in SSM_ACCURACY}
    assert averages.keys() == {"S4", "S4D-LegS", "S5", "Mega"}
    assert (averages["S4"], averages["S5"], averages["Mega"]) == (86.09, 87.46, 88.21)
