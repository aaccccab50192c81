"""A run of the train-speed benchmark (``TrainSpeedSettings``), its rows (``TrainSpeedRow``) and what it
writes: ``train_speed_<device>.csv`` and the page ``train_speed_<device>.md`` (one row per task ×
attention: median step, samples per second, projected hours and peak memory, beside the Skyformer
paper's Table 2)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lra.bench.isolation import Isolation
from lra.bench.output import failures, number
from lra.bench.timing import PROBES
from lra.provenance import markdown_table
from lra.published_numbers import RUN_COST, RUN_COST_PAPER

CSV_COLUMNS = {
    "task": "", "attention": "", "batch": "", "seq_len": "", "documents": "", "step_ms": ".1f",
    "samples_per_s": ".3f", "projected_hours": ".3f", "run_steps": "", "paper_hours": ".2f",
    "peak_mem_mb": ".1f", "status": "", "load_1min": ".2f",
}  # fmt: skip
REFERENCE = "standard"  # the attention whose step time the others are compared with
PUBLISHED = {cost.attention: cost for cost in RUN_COST}
PRECISION_NOTE = (
    "precision: the composed config's `trainer.precision` ({}), as Lightning applies it: `bf16-mixed` "
    "(`16-mixed`) = bf16 (fp16) autocast around `training_step`, `32-true` = 32-bit"
)
CPU_NOTE = (
    "On a CPU the projected hours are for comparison only: the paper's are GPU hours, and a CPU step at "
    "these shapes is one to three orders of magnitude slower. Compare the ratios to `standard` "
    "(ours / the paper's), not the hours."
)


@dataclass(frozen=True)
class TrainSpeedSettings:
    """A run: every task × attention, ``steps`` timed after ``warmup`` untimed, with the Hydra
    ``overrides`` of every configuration, where (``run``) and the output folder."""

    tasks: tuple[str, ...]
    attentions: tuple[str, ...]
    steps: int
    warmup: int
    overrides: tuple[str, ...]
    run: Isolation
    out: Path


def paper_hours(attention: str, task: str) -> float | None:
    """Skyformer Table 2's hours for a whole 50k-step run on one V100, where it has the pair."""
    cost = PUBLISHED.get(attention)
    return None if cost is None else cost.hours.get(task)


def paper_peak_gb(attention: str, task: str) -> float | None:
    cost = PUBLISHED.get(attention)
    return None if cost is None or cost.peak_gb is None else cost.peak_gb.get(task)


@dataclass(frozen=True)
class TrainSpeedRow:
    """One CSV row; ``run_steps`` is the config's ``trainer.max_steps``, the run the projection is for."""

    task: str
    attention: str
    batch: int
    seq_len: int
    documents: int
    run_steps: int
    step_ms: float | None
    peak_mem_mb: float | None
    status: str
    detail: str = ""
    timed_steps: int = 0
    load_1min: float | None = None  # the machine's load average when the measurement started
    precision: str = ""  # the config's trainer.precision, which the step ran under

    @property
    def samples_per_s(self) -> float | None:
        """Examples (pairs of documents for retrieval) per second at the median step."""
        return None if self.step_ms is None else 1000 * self.batch / self.step_ms

    @property
    def projected_hours(self) -> float | None:
        """The median step × ``run_steps``, in hours (training steps only: no evaluation, no data loading)."""
        return None if self.step_ms is None else self.step_ms * self.run_steps / 3_600_000

    @property
    def paper_hours(self) -> float | None:
        """Skyformer Table 2's hours for this task × attention (whole run, one V100), where it has them."""
        return paper_hours(self.attention, self.task)


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
         number(r.paper_hours, ".2f") or "—", ratio_to_reference(r, rows),
         cell(r, r.peak_mem_mb, ".0f"), number(paper_peak_gb(r.attention, r.task), ".2f") or "—",
         number(r.load_1min, ".1f")]
        for r in rows
    ]  # fmt: skip
    return markdown_table(header, body)


def page(rows: Sequence[TrainSpeedRow], settings: TrainSpeedSettings) -> tuple[str, list[str], list[str]]:
    """The page's title, paragraphs and sections (the table, the configurations without a figure)."""
    overrides = " ".join(f"`{o}`" for o in settings.overrides) or "none"
    device = settings.run.device.type
    paragraphs = [
        "Per task at its real shape (batch × sequence length, × 2 documents for retrieval) and attention: "
        "the median time of a full harness training step (`LRALitModule.training_step`, backward, gradient "
        "clipping as configured, optimizer and scheduler step; the module built from the composed Hydra "
        f"config by `lra.train.build_module`) over {settings.steps} timed step(s) after {settings.warmup} "
        f"warm-up step(s), on a random batch with every position a real token; "
        + PRECISION_NOTE.format(", ".join(sorted({f"`{r.precision}`" for r in rows})))
        + ". "
        "Projected hours = median step × the config's `trainer.max_steps` / 3600: training steps only "
        f"(no evaluation, no data loading). Beside them, {RUN_COST_PAPER}, evaluation included.",
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
