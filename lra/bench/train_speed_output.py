"""The train-speed benchmark's files: ``train_speed_<device>.csv`` and ``train_speed_<device>.md`` (one
row per task × attention: median step, samples per second, projected hours and peak memory, beside
the Skyformer paper's Table 2)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import torch

from lra.bench.isolation import isolation_note
from lra.bench.train_speed_measure import TrainSpeedRow
from lra.bench.writers import number, write_csv
from lra.report.provenance import markdown_table
from lra.report.published import RUN_COST, RUN_COST_PAPER

CSV_COLUMNS = (
    "task",
    "attention",
    "batch",
    "seq_len",
    "documents",
    "step_ms",
    "samples_per_s",
    "projected_hours",
    "run_steps",
    "paper_hours",
    "peak_mem_mb",
    "status",
    "load_1min",
)
REFERENCE = "standard"  # the attention whose step time the others are compared with
PUBLISHED = {cost.attention: cost for cost in RUN_COST}
MEMORY_METHODS = {
    "cpu": "peak RSS (VmHWM, reset via /proc/self/clear_refs)",
    "cuda": "torch.cuda.max_memory_allocated",
}
PRECISIONS = {"cpu": "32-bit", "cuda": 'bf16 autocast around `training_step` (the harness\'s "bf16-mixed")'}
CPU_NOTE = (
    "On a CPU the projected hours are for comparison only: the paper's are GPU hours, and a CPU step at "
    "these shapes is one to three orders of magnitude slower. Compare the ratios to `standard` "
    "(ours / the paper's), not the hours."
)


def paper_hours(attention: str, task: str) -> float | None:
    """Skyformer Table 2's hours for a whole 50k-step run on one V100, where it has the pair."""
    cost = PUBLISHED.get(attention)
    return None if cost is None else cost.hours.get(task)


def paper_peak_gb(attention: str, task: str) -> float | None:
    cost = PUBLISHED.get(attention)
    return None if cost is None or cost.peak_gb is None else cost.peak_gb.get(task)


def write_rows(path: Path, rows: Sequence[TrainSpeedRow]) -> None:
    """One CSV line per row, columns ``CSV_COLUMNS`` (empty figures where there are none)."""
    write_csv(
        path,
        CSV_COLUMNS,
        (
            [r.task, r.attention, r.batch, r.seq_len, r.documents, number(r.step_ms, ".1f"),
             number(r.samples_per_s, ".3f"), number(r.projected_hours, ".3f"), r.run_steps,
             number(paper_hours(r.attention, r.task), ".2f"), number(r.peak_mem_mb, ".1f"), r.status,
             number(r.load_1min, ".2f")]
            for r in rows
        ),
    )  # fmt: skip


def ratio_to_reference(row: TrainSpeedRow, rows: Sequence[TrainSpeedRow]) -> str:
    """``ours / paper``: this attention's step time ÷ ``standard``'s on the same task, and Table 2's."""
    reference = next((r for r in rows if r.task == row.task and r.attention == REFERENCE), None)
    ours = (
        number(row.step_ms / reference.step_ms, ".2f")
        if row.step_ms is not None and reference is not None and reference.step_ms is not None
        else "—"
    )
    mine, theirs = paper_hours(row.attention, row.task), paper_hours(REFERENCE, row.task)
    paper = f"{mine / theirs:.2f}" if mine is not None and theirs is not None else "—"
    return f"{ours} / {paper}"


def speed_table(rows: Sequence[TrainSpeedRow]) -> str:
    """Markdown: one line per task × attention, our figures beside Table 2's."""
    header = [
        "task", "attention", "batch × length", "step (ms, median)", "samples/s",
        f"projected h ({rows[0].run_steps} steps)" if rows else "projected h",
        "Table 2 h (V100)", f"step ÷ `{REFERENCE}`'s: ours / Table 2", "peak memory (MB)",
        "Table 2 peak (GB)", "load (1 min)",
    ]  # fmt: skip

    def cell(row: TrainSpeedRow, value: float | None, fmt: str) -> str:
        return row.status if row.status != "ok" else number(value, fmt)

    body = [
        [r.task, r.attention, f"{r.batch} × {r.seq_len}" + (f" × {r.documents}" if r.documents > 1 else ""),
         cell(r, r.step_ms, ".0f"), cell(r, r.samples_per_s, ".2f"), cell(r, r.projected_hours, ".1f"),
         number(paper_hours(r.attention, r.task), ".2f") or "—", ratio_to_reference(r, rows),
         cell(r, r.peak_mem_mb, ".0f"), number(paper_peak_gb(r.attention, r.task), ".2f") or "—",
         number(r.load_1min, ".1f")]
        for r in rows
    ]  # fmt: skip
    return markdown_table(header, body)


def write_markdown(
    path: Path,
    rows: Sequence[TrainSpeedRow],
    settings: argparse.Namespace,
    device: torch.device,
    machine: list[str],
    command: str,
) -> None:
    overrides = " ".join(f"`{o}`" for o in settings.overrides) or "none"
    lines = [
        f"# Training speed on {device.type}",
        "",
        "Per task at its real shape (batch × sequence length, × 2 documents for retrieval) and attention: "
        "the median time of a full harness training step (`LRALitModule.training_step`, backward, gradient "
        "clipping as configured, optimizer and scheduler step; the module built from the composed Hydra "
        f"config by `lra.train.build_module`) over {settings.steps} timed step(s) after {settings.warmup} "
        f"warm-up step(s), on a random batch with every position a real token; {PRECISIONS[device.type]}. "
        "Projected hours = median step × the config's `trainer.max_steps` / 3600: training steps only "
        f"(no evaluation, no data loading). Beside them, {RUN_COST_PAPER}, evaluation included.",
        "",
        *([CPU_NOTE, ""] if device.type == "cpu" else []),
        f"Memory: {MEMORY_METHODS[device.type]} above the memory after the module and the batch were built "
        "(optimizer state, activations, gradients and the one-time costs of the first step count). "
        f"{isolation_note(settings)}; torch threads per measurement: {settings.threads or 'torch default'}. "
        f"Hydra overrides: {overrides}. Load: the machine's 1-minute load average when each configuration "
        "started; the benchmark's own torch threads (of the configuration before) count in it, so a figure "
        "well above their number means other work shared the CPU and inflated the time.",
        "",
        *machine,
        f"- command: `{command}`",
        "",
        speed_table(rows),
    ]
    failures = [row for row in rows if row.status != "ok"]
    if failures:
        lines += ["", "Configurations without a figure:", ""]
        lines += [
            f"- {r.task} × `{r.attention}`: {r.status} ({' '.join(r.detail.split())})" for r in failures
        ]
    path.write_text("\n".join(lines) + "\n")
