"""``python -m lra.bench compare --against authors``: our cores against the authors' implementations
(``lra.bench.authors_cores``), forward+backward timed interleaved in one process and one thread, so that
load from other processes falls on both alike; docs/benchmarks.md says what each side's figures are and
what ``--steady-heap`` changes."""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch

from attention_zoo.saved_memory import saved_tensor_bytes
from lra.bench.authors_cores import Pair, authors_pairs, authors_provenance
from lra.bench.measuring import elapsed_ms, run_all
from lra.bench.options import option, settings_of
from lra.bench.output import Outputs, number, out_option
from lra.job.memory import keep_freed_heap, minor_page_faults
from lra.provenance import markdown_table

HELP = "forward+backward of our cores against reference implementations, timed interleaved"
SIDES = ("ours", "reference")
CSV_COLUMNS = {
    "label": "", "length": "d", "ours_median_ms": ".2f", "reference_median_ms": ".2f", "time_ratio": ".3f",
    "fastest_ratio": ".3f", "ours_median_faults": ".0f", "reference_median_faults": ".0f",
    "ours_kept_mb": ".2f", "reference_kept_mb": ".2f", "kept_ratio": ".3f",
}  # fmt: skip
HEADER = (
    "core", "n", "ours (ms)", "reference (ms)", "time ratio", "fastest-step ratio", "per-round ratios",
    "page faults per step (ours / reference)", "ours kept (MB)", "reference kept (MB)", "kept ratio",
)  # fmt: skip


@dataclass(frozen=True)
class Settings:
    """A run: the cores (None: all) of the authors' checkout against ours, at each length."""

    against: str = option(choices=("authors",), required=True)
    authors_code: Path | None = option(type=Path, help="a checkout of github.com/pkuzengqi/Skyformer")
    cores: tuple[str, ...] | None = option(nargs="+", help="a subset of the cores (default: all)")
    lengths: tuple[int, ...] = option(type=int, nargs="+", default=[4096], help="default: 4096")
    batch: int = option(type=int, default=4)
    heads: int = option(type=int, default=2)
    head_dim: int = option(type=int, default=32)
    threads: int = option(type=int, default=1)
    warmup: int = option(type=int, default=2)
    rounds: int = option(type=int, default=9)
    steady_heap: bool = option(
        action="store_true", help="glibc keeps freed memory: times without page faults"
    )
    out: Path = out_option("compare_authors_cpu.*")


def settings_from(args: argparse.Namespace) -> Settings:
    if not args.authors_code:
        raise ValueError("--against authors needs --authors-code PATH (a checkout of pkuzengqi/Skyformer)")
    return settings_of(Settings, args)


@dataclass(frozen=True)
class Comparison:
    """One pair at one length: per side the median step (ms), the median minor page faults per step and
    what its graph keeps (MB); ratios ours ÷ reference (of the fastest steps; the lowest and highest of a
    round)."""

    label: str
    length: int
    ours_median_ms: float
    reference_median_ms: float
    time_ratio: float
    fastest_ratio: float
    round_ratios: tuple[float, float]
    ours_median_faults: float
    reference_median_faults: float
    ours_kept_mb: float
    reference_kept_mb: float
    kept_ratio: float | None


def compare(pair: Pair, length: int, rounds: int, warmup: int) -> Comparison:
    """``rounds`` interleaved steps of each side (its output, then the gradients of its sum to the float
    inputs) after ``warmup`` of each; what each keeps for backward."""
    inputs = pair.make_inputs()
    floats = [t for t in inputs if isinstance(t, torch.Tensor) and t.requires_grad]
    kept = {t for t in inputs if isinstance(t, torch.Tensor)} | set(pair.weights)
    functions = {"ours": pair.ours, "reference": pair.reference}
    steps = {side: lambda f=f: torch.autograd.grad(f(*inputs).sum(), floats) for side, f in functions.items()}
    saved = {side: saved_tensor_bytes(lambda f=f: f(*inputs), kept) / 2**20 for side, f in functions.items()}
    for step in steps.values():
        for _ in range(warmup):
            step()
    times: dict[str, list[float]] = {side: [] for side in SIDES}
    faults: dict[str, list[int]] = {side: [] for side in SIDES}
    for round_index in range(rounds):
        for side in SIDES if round_index % 2 == 0 else SIDES[::-1]:
            before = minor_page_faults()
            times[side].append(elapsed_ms(steps[side]))
            faults[side].append(minor_page_faults() - before)
    median = {side: statistics.median(times[side]) for side in SIDES}
    ratios = [ours / reference for ours, reference in zip(times["ours"], times["reference"], strict=True)]
    return Comparison(
        pair.label, length, median["ours"], median["reference"], median["ours"] / median["reference"],
        min(times["ours"]) / min(times["reference"]), (min(ratios), max(ratios)),
        statistics.median(faults["ours"]), statistics.median(faults["reference"]), saved["ours"],
        saved["reference"], saved["ours"] / saved["reference"] if saved["reference"] else None,
    )  # fmt: skip


def comparison_row(result: Comparison) -> list[str]:
    return [
        result.label, str(result.length), f"{result.ours_median_ms:.1f}", f"{result.reference_median_ms:.1f}",
        f"**{result.time_ratio:.2f}**", f"{result.fastest_ratio:.2f}",
        "{:.2f}–{:.2f}".format(*result.round_ratios),
        f"{result.ours_median_faults:.0f} / {result.reference_median_faults:.0f}",
        f"{result.ours_kept_mb:.1f}", f"{result.reference_kept_mb:.1f}",
        number(result.kept_ratio, ".2f") or "—",
    ]  # fmt: skip


def page(settings: Settings, results: Sequence[Comparison]) -> tuple[str, list[str], list[str]]:
    """The page's title, paragraphs (what was run, the allocator) and its table."""
    method = (
        f"Forward+backward, batch {settings.batch}, {settings.heads} heads, head_dim {settings.head_dim}, "
        f"{settings.threads} torch thread(s); reference: the authors' implementations "
        f"(lra/bench/authors_cores.py; their code from a checkout). {settings.warmup} "
        f"warm-up step(s) each, then {settings.rounds} rounds alternating the two (median per side; "
        "fastest-step ratio: the two sides' fastest steps, which load from other processes inflates "
        "least; per-round ratios: min–max of ours/reference within a round; page faults: median minor "
        "faults per step, each a 4 KiB page mapped and zeroed on first touch). Kept: bytes the output's "
        "graph keeps for backward, inputs and weights not counted (a resident-set peak cannot separate "
        "two implementations in one process)."
    )
    heap = (
        "Allocator: steady heap (`--steady-heap`: glibc's malloc keeps freed memory, so the times are "
        "compute and memory traffic without page faults)."
        if settings.steady_heap
        else "Allocator: glibc's default (large freed buffers go back to the OS; page faults on new ones "
        "count in the times and vary with the allocator's history; `--steady-heap` removes them)."
    )
    table = markdown_table(HEADER, [comparison_row(r) for r in results])
    return "Our cores against authors", [method, heap], [table]


def run(settings: Settings, argv: Sequence[str]) -> None:
    benchmark = f"compare_{settings.against}" + ("_steady_heap" if settings.steady_heap else "")
    outputs = Outputs.start(settings.out, benchmark, torch.device("cpu"), argv)
    if settings.steady_heap and not keep_freed_heap():
        raise ValueError("--steady-heap needs glibc's malloc (Linux); this C library has no mallopt")
    torch.set_num_threads(settings.threads)
    results, skipped = [], []
    for length in settings.lengths:
        shape = (settings.batch, settings.heads, length, settings.head_dim)
        pairs, skips = authors_pairs(settings.authors_code, settings.cores, shape)
        skipped += [line for line in skips if line not in skipped]
        measure = partial(compare, length=length, rounds=settings.rounds, warmup=settings.warmup)
        results += run_all(pairs, measure, lambda result: " | ".join(comparison_row(result)))
    print(*(f"skipped {line}" for line in skipped), sep="\n")
    outputs.write_csv(CSV_COLUMNS, results)
    notes = authors_provenance(settings.authors_code) + [f"- skipped {line}" for line in skipped]
    outputs.write_page(*page(settings, results), notes)
    outputs.announce("csv,md")
