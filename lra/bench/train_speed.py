"""``python -m lra.bench train-speed``: how long a full harness training step takes per task × attention
(``lra.bench.train_speed_measure``), projected to the config's ``trainer.max_steps`` beside the Skyformer
paper's Table 2. Writes ``train_speed_<device>.csv`` and the page ``train_speed_<device>.md``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import attention_zoo
from lra.bench import train_speed_measure
from lra.bench.measuring import PROBES, Isolation, add_run_arguments, run_all
from lra.bench.options import arguments, option, settings_of
from lra.bench.output import Outputs, failures, number, out_option
from lra.bench.train_speed_measure import TrainSpeedRow, paper_hours
from lra.provenance import markdown_table
from lra.results.published_costs import RUN_COST_PAPER
from lra.results.published_numbers import TASKS

HELP = "median full training step per task × attention, projected to a run, beside Skyformer Table 2"
# device type -> (timed steps, warm-up steps) when --steps / --warmup are not given
DEFAULT_STEPS = {"cpu": (3, 1), "cuda": (20, 5)}
CSV_COLUMNS = {
    "task": "", "attention": "", "batch": "", "seq_len": "", "documents": "", "step_ms": ".1f",
    "samples_per_s": ".3f", "projected_hours": ".3f", "run_steps": "", "paper_hours": ".2f",
    "peak_mem_mb": ".1f", "status": "", "load_1min": ".2f",
}  # fmt: skip
REFERENCE = "standard"  # the attention whose step time the others are compared with
OVERRIDES_HELP = (
    "Hydra overrides of every configuration (e.g. experiment=skyformer features=128 task.seq_len=256)"
)
CPU_NOTE = (
    "On a CPU the projected hours are for comparison only: the paper's are GPU hours, and a CPU step at "
    "these shapes is one to three orders of magnitude slower. Compare the ratios to `standard` "
    "(ours / the paper's), not the hours."
)


@dataclass(frozen=True)
class Settings:
    """A run: every task × attention with the ``overrides``, ``steps`` timed after ``warmup`` untimed."""

    tasks: tuple[str, ...] = option(nargs="+", default=list(TASKS))
    attentions: tuple[str, ...] = option(nargs="+", help="default: every registered attention")
    steps: int = option(type=int, help="timed steps (default: 3 on CPU, 20 on CUDA)")
    warmup: int = option(type=int, help="untimed steps first (default: 1 CPU, 5 CUDA)")
    overrides: tuple[str, ...] = option(nargs="+", default=[], metavar="KEY=VALUE", help=OVERRIDES_HELP)
    run: Isolation = arguments(partial(add_run_arguments, timeout_s=900))
    out: Path = out_option("train_speed_<device>.*")


def settings_from(args: argparse.Namespace) -> Settings:
    run = Isolation.from_args(args)
    default_steps, default_warmup = DEFAULT_STEPS[run.device.type]
    steps = default_steps if args.steps is None else args.steps
    warmup = default_warmup if args.warmup is None else args.warmup
    if steps < 1 or warmup < 0:
        raise ValueError(f"--steps must be >= 1 and --warmup >= 0, got {steps} and {warmup}")
    attentions = args.attentions or attention_zoo.available()
    return settings_of(Settings, args, attentions=attentions, steps=steps, warmup=warmup, run=run)


def ratio_to_reference(row: TrainSpeedRow, rows: Sequence[TrainSpeedRow]) -> str:
    """``ours / paper``: this attention's step time ÷ ``standard``'s on the same task, and Table 2's."""
    reference = next((r for r in rows if r.task == row.task and r.attention == REFERENCE), None)
    measured = row.step_ms is not None and reference is not None and reference.step_ms is not None
    ours = f"{row.step_ms / reference.step_ms:.2f}" if measured else "—"
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
         number(r.paper_hours, ".2f") or "—", ratio_to_reference(r, rows),
         cell(r, r.peak_mem_mb, ".0f"), number(r.paper_peak_gb, ".2f") or "—",
         number(r.load_1min, ".1f")]
        for r in rows
    ]  # fmt: skip
    return markdown_table(header, body)


def page(rows: Sequence[TrainSpeedRow], settings: Settings) -> tuple[str, list[str], list[str]]:
    """The page's title, paragraphs and sections (the table, the configurations without a figure)."""
    overrides = " ".join(f"`{o}`" for o in settings.overrides) or "none"
    precisions = ", ".join(sorted({f"`{r.precision}`" for r in rows}))
    device = settings.run.device.type
    paragraphs = [
        "Per task at its real shape (batch × sequence length, × 2 documents for retrieval) and attention: "
        "the median time of a full harness training step (`LRALitModule.training_step`, backward, gradient "
        "clipping as configured, optimizer and scheduler step; the module built from the composed Hydra "
        f"config by `lra.job.train.build_module`) over {settings.steps} timed step(s) after {settings.warmup}"
        " warm-up step(s), on a random batch with every position a real token; precision: the composed "
        f"config's `trainer.precision` ({precisions}), as Lightning applies it: `bf16-mixed` (`16-mixed`) = "
        "bf16 (fp16) autocast around `training_step`, `32-true` = 32-bit. Projected hours = median step × "
        "the config's `trainer.max_steps` / 3600: training steps only (no evaluation, no data loading). "
        f"Beside them, {RUN_COST_PAPER}, evaluation included.",
        *([CPU_NOTE] if device == "cpu" else []),
        f"Memory: {PROBES[device].method} above the memory after the module and the batch were built "
        "(optimizer state, activations, gradients and the one-time costs of the first step count). "
        f"{settings.run.note()}. Hydra overrides: {overrides}. Load: the machine's 1-minute load average "
        "when each configuration started; the benchmark's own torch threads (of the configuration before) "
        "count in it, so a figure well above their number means other work shared the CPU and inflated "
        "the time.",
    ]
    sections = [speed_table(rows), *failures(rows, lambda r: f"{r.task} × `{r.attention}`")]
    return f"Training speed on {device}", paragraphs, sections


def run(settings: Settings, argv: Sequence[str]) -> None:
    timing = (str(settings.run.device), settings.warmup, settings.steps)
    configs = [
        train_speed_measure.TrainSpeedConfig(task, attention, settings.overrides, *timing)
        for task in settings.tasks
        for attention in settings.attentions
    ]
    for config in configs:  # a bad task, attention or override is a usage error before anything runs
        config.compose_checked()
    outputs = Outputs.start(settings.out, "train_speed", settings.run.device, argv)
    run_one = partial(settings.run.measure, train_speed_measure.measure, train_speed_measure.failed)
    rows = run_all(configs, run_one, train_speed_measure.format_progress)
    outputs.write_csv(CSV_COLUMNS, rows)
    outputs.write_page(*page(rows, settings))
    outputs.announce("csv,md")
