"""``python -m lra.bench efficiency|fidelity`` on tiny sizes: well-formed outputs, failures recorded."""

from __future__ import annotations

import argparse
import csv
import re
import subprocess
from pathlib import Path

import pytest
import torch

import attention_zoo
from lra.bench import efficiency, efficiency_paper, fidelity
from lra.bench.__main__ import main
from lra.bench.efficiency_measure import (
    NAIVE,
    BenchConfig,
    Measurement,
    NaiveSoftmaxAttention,
    bench_names,
    build_core,
    measure,
    sweep,
)
from lra.bench.fidelity_measure import checkpoint_core_inputs, relative_spectral_error
from lra.bench.measuring import Failure, Isolation

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
REPO = Path(__file__).resolve().parents[1]


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open() as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def test_naive_baseline_equals_standard_attention_with_padding():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 2, 33, 8) for _ in range(3))
    mask = torch.arange(33)[None, :] < torch.tensor([[33], [20]])
    naive = NaiveSoftmaxAttention(head_dim=8, num_heads=2, seq_len=33)
    standard = attention_zoo.build_attention("standard", head_dim=8, num_heads=2, seq_len=33)
    real = mask[:, None, :, None]
    torch.testing.assert_close(
        naive(q, k, v, mask) * real, standard(q, k, v, mask) * real, atol=1e-5, rtol=1e-5
    )


def test_build_core_rejects_options_for_the_baseline():
    with pytest.raises(ValueError, match="takes no options"):
        build_core(NAIVE, 8, 2, 16, num_landmarks=4)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def test_efficiency_in_process_writes_csv_markdown_and_plot(tmp_path, device):
    argv = ["efficiency", "--attentions", "standard", "nystrom", NAIVE, "--lengths", "128", "64"]
    argv += ["--scopes", "layer", "encoder", "--repeats", "1", "--warmup", "0", "--isolation", "inprocess"]
    assert main([*argv, "--device", device, "--out", str(tmp_path)]) == 0

    for name in (f"efficiency_{device}.csv", f"efficiency_{device}_encoder.csv"):
        columns, rows = read_csv(tmp_path / name)
        assert tuple(columns) == tuple(efficiency.CSV_COLUMNS)
        assert [(r["attention"], int(r["seq_len"])) for r in rows] == [
            (a, n) for a in ("standard", "nystrom", NAIVE) for n in (64, 128)
        ]
        assert all(r["status"] == "ok" and float(r["time_ms"]) > 0 and r["batch"] == "1" for r in rows)
        assert all(r["peak_mem_mb"] != "" for r in rows)
    report = (tmp_path / f"efficiency_{device}.md").read_text()
    for expected in (
        "## layer",
        "## encoder",
        "Ratio to `standard`",
        "Ratio to `naive`",
        "- CPU: ",
        "- torch ",
    ):
        assert expected in report
    assert "python -m lra.bench efficiency --attentions standard nystrom naive" in report
    assert (tmp_path / f"efficiency_{device}.png").read_bytes().startswith(PNG_MAGIC)


@pytest.mark.slow  # three measurements, each in a fresh interpreter that imports torch
def test_efficiency_subprocess_records_out_of_memory_and_skips_longer(tmp_path):
    argv = ["efficiency", "--attentions", NAIVE, "--lengths", "64", "8192", "16384", "--scopes", "layer"]
    argv += ["--repeats", "1", "--warmup", "0", "--isolation", "subprocess", "--mem-limit-mb", "256"]
    assert main([*argv, "--device", "cpu", "--out", str(tmp_path)]) == 0
    _, rows = read_csv(tmp_path / "efficiency_cpu.csv")
    assert [r["status"] for r in rows] == ["ok", "oom", "skipped"]  # 8192² fp32 scores need 512 MB
    assert rows[0]["time_ms"] and rows[1]["time_ms"] == rows[1]["peak_mem_mb"] == ""
    report = (tmp_path / "efficiency_cpu.md").read_text()
    assert "oom at seq_len 8192" in report and "address-space limit 256 MB" in report


def test_a_configuration_past_its_timeout_is_a_row_not_a_crash():
    config = BenchConfig(NAIVE, 64, repeats=1, warmup=0)
    isolation = Isolation(torch.device("cpu"), mode="subprocess", timeout_s=0.05)
    row = isolation.measure(measure, Measurement.of, config)
    assert (row.status, row.time_ms, row.peak_mem_mb) == ("timeout", None, None)


def test_a_failing_workload_is_an_error_row():
    row = measure(BenchConfig("standard", 16, dim=10, heads=3, repeats=1))
    assert row.status == "error" and "divisible" in row.detail


def test_time_budget_stops_repeating_after_one_timed_step():
    config = BenchConfig("standard", 32, repeats=5, warmup=0, time_budget_s=0.0)
    row = measure(config)
    assert (row.status, row.timed_steps) == ("ok", 1)
    assert measure(BenchConfig("standard", 32, repeats=3, warmup=0)).timed_steps == 3


def test_sweep_skips_longer_lengths_after_a_slow_step_or_a_failure():
    def fake(config: BenchConfig) -> Measurement:
        if config.attention == "broken" and config.seq_len == 128:
            return Measurement.of(config, Failure("oom", "too big"))
        return Measurement(config.attention, config.seq_len, 1, config.seq_len * 100.0, 1.0, "ok")

    configs = [BenchConfig(a, n) for a in ("slow", "broken") for n in (64, 128, 256)]
    rows = sweep(configs, fake, max_step_s=10.0)
    assert [(r.attention, r.seq_len, r.status) for r in rows] == [
        ("slow", 64, "ok"),
        ("slow", 128, "ok"),  # 12.8 s: over the limit, so 256 is not attempted
        ("slow", 256, "skipped"),
        ("broken", 64, "ok"),
        ("broken", 128, "oom"),
        ("broken", 256, "skipped"),
    ]
    assert "over --max-step-s 10" in rows[2].detail and rows[5].detail == "oom at seq_len 128"


def test_memory_growth_table_reads_ratios_over_eight_times_length():
    rows = [
        Measurement("a", n, 1, 1.0, mem, "ok")
        for n, mem in ((64, 2.0), (128, 3.0), (512, 16.0), (1024, 192.0))
    ]
    text = efficiency.scope_tables(rows, [64, 128, 512, 1024], repeats=1)
    assert "| a | ×8 | ×64 |" in text


def test_paper_mode_measures_the_tables_rows_in_its_layout(tmp_path):
    argv = ["efficiency", "--paper", "nystromformer-table1", "--lengths", "128", "64", "--dim", "32"]
    argv += ["--heads", "2", "--repeats", "1", "--warmup", "0", "--isolation", "inprocess"]
    assert main([*argv, "--device", "cpu", "--out", str(tmp_path)]) == 0
    columns, rows = read_csv(tmp_path / "nystromformer_table1_cpu.csv")
    assert tuple(columns) == ("label", *efficiency.CSV_COLUMNS)
    table = efficiency_paper.PAPER_TABLES["nystromformer-table1"]
    assert [(r["label"], r["attention"], int(r["seq_len"])) for r in rows] == [
        (row.label, row.attention, n) for row in table.rows for n in (64, 128)
    ]
    for row in rows:  # an attention not (yet) in the registry is a row that says so
        registered = row["attention"] in bench_names()
        assert row["status"] == ("ok" if registered else "not registered")
        assert (row["time_ms"] != "") == registered
    report = (tmp_path / "nystromformer_table1_cpu.md").read_text()
    assert "inference_mode" in report and "## Published" in report and "| Nyströmformer-32 |" in report


def test_paper_layout_cells_are_memory_and_time_with_factors_to_the_first_row():
    figures = {("T", 512): (100.0, 10.0), ("A", 512): (25.0, 5.0), ("B", 512): "oom"}
    table = efficiency_paper.layout_table(figures, ["T", "A", "B", "C"], [512])
    assert "| T | 100 / 10.0 |" in table and "| A | 25.0 (×4.0) / 5.0 (×2.0) |" in table
    assert "| B | oom |" in table and "| C | — |" in table


def test_unknown_attention_is_a_usage_error(capsys):
    with pytest.raises(SystemExit):
        main(["efficiency", "--attentions", "no-such-core"])
    assert "valid" in capsys.readouterr().err


def test_relative_spectral_error():
    exact = torch.randn(2, 3, 40, 8, dtype=torch.float64)
    torch.testing.assert_close(relative_spectral_error(exact, exact), torch.zeros(2, 3, dtype=torch.float64))
    torch.testing.assert_close(
        relative_spectral_error(1.1 * exact, exact), torch.full((2, 3), 0.1, dtype=torch.float64)
    )


def test_overrides_are_checked_against_the_core_options():
    assert fidelity.parse_overrides(["nystrom.conv_kernel_size=None", "performer.num_features=8"]) == {
        "nystrom": {"conv_kernel_size": None},
        "performer": {"num_features": 8},
    }
    with pytest.raises(ValueError, match="num_landmarks"):
        fidelity.parse_overrides(["nystrom.landmarks=3"])


def test_fidelity_tiny_run_writes_outputs_and_nystrom_converges(tmp_path):
    argv = ["fidelity", "--lengths", "64", "32", "--budgets", "16", "32", "--seeds", "0", "1"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    columns, rows = read_csv(tmp_path / "fidelity_cpu.csv")
    assert tuple(columns) == tuple(fidelity.CSV_COLUMNS)
    expected = {
        name: attention_zoo.spec(name).approximates
        for name in attention_zoo.available()
        if attention_zoo.spec(name).approximates and name != "linformer"  # learned projections: left out
    }
    assert {r["attention"]: r["exact"] for r in rows} == expected
    for row in rows:
        assert float(row["error_mean"]) >= 0 and int(row["samples"]) == 2 * 1 * 2  # seeds × batch × heads
        budget_option = attention_zoo.spec(row["attention"]).budget_option
        assert row["budget_option"] == (budget_option or "")
        assert (row["budget"] == "") == (budget_option is None)
        assert budget_option is None or int(row["budget"]) <= int(row["seq_len"])
    nystrom = {
        (int(r["budget"]), int(r["seq_len"])): float(r["error_mean"])
        for r in rows
        if r["attention"] == "nystrom"
    }
    assert set(nystrom) == {(16, 32), (32, 32), (16, 64), (32, 64)}
    assert nystrom[(32, 32)] < 0.05  # landmarks = every position: only the iterative inverse's residue
    assert nystrom[(16, 32)] > 4 * nystrom[(32, 32)]
    report = (tmp_path / "fidelity_cpu.md").read_text()
    assert "## random inputs" in report and "`linformer`" in report and "num_landmarks=32" in report
    assert (tmp_path / "fidelity_cpu.png").read_bytes().startswith(PNG_MAGIC)


def test_fidelity_on_the_qkv_of_a_trained_checkpoint(tmp_path, data_root):
    from conftest import TINY_SEQ_LEN, compose_config, smoke_overrides

    from lra.job.train import run

    summary = run(compose_config(smoke_overrides(data_root, "image", "standard")), tmp_path / "run")
    assert summary["status"] == "completed", summary["error"]
    checkpoint = tmp_path / "run" / "checkpoints" / "best.ckpt"

    captured = checkpoint_core_inputs(checkpoint, data_root, count=3)
    assert len(captured) == 2  # one (q, k, v, mask) per encoder layer
    for (q, k, v), mask in captured:
        assert q.shape == k.shape == v.shape == (3, 2, TINY_SEQ_LEN, 32) and mask.shape == (3, TINY_SEQ_LEN)

    argv = ["fidelity", "--lengths", "16", str(TINY_SEQ_LEN), "--budgets", "8", "16", "--seeds", "0"]
    argv += ["--checkpoint", str(checkpoint), "--data-root", str(data_root), "--checkpoint-batch", "3"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 0
    _, rows = read_csv(tmp_path / "out" / "fidelity_cpu.csv")
    from_checkpoint = [r for r in rows if r["source"] == "checkpoint"]
    assert {r["seq_len"] for r in from_checkpoint} == {"16", str(TINY_SEQ_LEN)}
    assert all(int(r["samples"]) == 2 * 3 * 2 for r in from_checkpoint)  # layers × examples × heads
    assert "## checkpoint inputs" in (tmp_path / "out" / "fidelity_cpu.md").read_text()


def test_checkpoint_without_its_run_folder_is_a_clear_error(tmp_path):
    stray = tmp_path / "best.ckpt"
    stray.write_bytes(b"")
    with pytest.raises(FileNotFoundError, match="summary.json"):
        checkpoint_core_inputs(stray, None, count=2)


REQUIRED_ARGUMENTS = {
    "compare": ["--against", "authors"],
    "authors-ssm": ["--s4-code", "a", "--mamba-code", "b"],
}


def test_every_benchmark_writes_to_the_git_ignored_outputs_bench_unless_told(tmp_path, monkeypatch):
    from lra.bench.__main__ import COMMANDS
    from lra.bench.options import add_options
    from lra.bench.output import DEFAULT_OUT

    for name, module in COMMANDS.items():
        parser = argparse.ArgumentParser()
        add_options(parser, module.Settings)
        required = REQUIRED_ARGUMENTS.get(name, [])
        assert parser.parse_args(required).out == DEFAULT_OUT == Path("outputs/bench"), name
    ignored = subprocess.run(["git", "check-ignore", "-q", "outputs/bench/efficiency_cpu.md"], cwd=REPO)
    assert ignored.returncode == 0, "outputs/ is not in .gitignore"
    monkeypatch.chdir(tmp_path)  # a checkout: the run must leave results/ alone
    # --device cpu: the default is cuda where a GPU is present, which names the files efficiency_cuda.*
    argv = [
        "efficiency",
        "--attentions",
        "standard",
        "--lengths",
        "32",
        "--scopes",
        "layer",
        "--device",
        "cpu",
    ]
    assert main([*argv, "--repeats", "1", "--warmup", "0", "--isolation", "inprocess"]) == 0
    assert (tmp_path / "outputs" / "bench" / "efficiency_cpu.md").is_file()
    assert not (tmp_path / "results").exists()


def test_the_results_readme_writes_into_results_on_purpose():
    commands = re.findall(r"`(python -m lra\.bench [^`]*)`", (REPO / "results" / "README.md").read_text())
    assert commands and all("--out results" in command for command in commands), commands
