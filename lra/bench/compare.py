"""``python -m lra.bench compare --against authors``: our cores against the authors' implementations.

Each pair (``lra.bench.authors_cores``: the Skyformer authors' classes from a checkout, transformers'
``LongformerSelfAttention``) is timed interleaved in one process and one thread
(``lra.bench.interleaved``), at n = 4096 by default. glibc's malloc hands large freed buffers back to
the OS, and each page of a new one is then mapped and zeroed on first touch, as often as the
allocator's history makes it; ``--steady-heap`` makes malloc keep freed memory
(``lra.memory.keep_freed_heap``), so the times are compute and memory traffic only.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from lra.bench.authors_cores import authors_pairs, authors_provenance
from lra.bench.interleaved import Comparison, compare
from lra.bench.output import Outputs, number
from lra.memory import keep_freed_heap
from lra.provenance import markdown_table

HELP = "forward+backward of our cores against reference implementations, timed interleaved"
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
class CompareSettings:
    """A run: the authors' checkout, the cores (None: all), the lengths, the inputs' shape, the torch
    threads, the warm-up steps and interleaved rounds, the C heap, the output folder."""

    authors_code: Path
    cores: tuple[str, ...] | None
    lengths: tuple[int, ...]
    batch: int
    heads: int
    head_dim: int
    threads: int
    warmup: int
    rounds: int
    steady_heap: bool
    out: Path


def comparison_row(result: Comparison) -> list[str]:
    return [
        result.label, str(result.length), f"{result.ours_median_ms:.1f}", f"{result.reference_median_ms:.1f}",
        f"**{result.time_ratio:.2f}**", f"{result.fastest_ratio:.2f}",
        "{:.2f}–{:.2f}".format(*result.round_ratios),
        f"{result.ours_median_faults:.0f} / {result.reference_median_faults:.0f}",
        f"{result.ours_kept_mb:.1f}", f"{result.reference_kept_mb:.1f}",
        number(result.kept_ratio, ".2f") or "—",
    ]  # fmt: skip


def page(settings: CompareSettings, results: Sequence[Comparison]) -> tuple[str, list[str], list[str]]:
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
    return (
        "Our cores against authors",
        [method, heap],
        [markdown_table(HEADER, [comparison_row(r) for r in results])],
    )


def configure(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--against", choices=("authors",), required=True)
    add("--authors-code", help="a checkout of github.com/pkuzengqi/Skyformer")
    add("--cores", nargs="+", default=None, help="a subset of the cores (default: all)")
    add("--lengths", type=int, nargs="+", default=[4096], help="default: 4096")
    add("--batch", type=int, default=4)
    add("--heads", type=int, default=2)
    add("--head-dim", type=int, default=32)
    add("--threads", type=int, default=1)
    add("--warmup", type=int, default=2)
    add("--rounds", type=int, default=9)
    add(
        "--steady-heap",
        action="store_true",
        help="keep freed memory in the C heap (glibc): times without page faults; writes *_steady_heap_*",
    )
    add("--out", type=Path, default=Path("results"), help="folder for compare_authors_cpu.*")


def settings_from(args: argparse.Namespace) -> CompareSettings:
    if not args.authors_code:
        raise ValueError("--against authors needs --authors-code PATH (a checkout of pkuzengqi/Skyformer)")
    cores = tuple(args.cores) if args.cores else None
    return CompareSettings(
        Path(args.authors_code), cores, tuple(args.lengths), args.batch, args.heads, args.head_dim,
        args.threads, args.warmup, args.rounds, args.steady_heap, args.out,
    )  # fmt: skip


def run(settings: CompareSettings, argv: Sequence[str]) -> None:
    benchmark = "compare_authors" + ("_steady_heap" if settings.steady_heap else "")
    outputs = Outputs.start(settings.out, benchmark, torch.device("cpu"), ["compare", *argv])
    if settings.steady_heap and not keep_freed_heap():
        raise ValueError("--steady-heap needs glibc's malloc (Linux); this C library has no mallopt")
    torch.set_num_threads(settings.threads)
    results, skipped = [], []
    for length in settings.lengths:
        shape = (settings.batch, settings.heads, length, settings.head_dim)
        pairs, skips = authors_pairs(settings.authors_code, settings.cores, shape)
        skipped += [line for line in skips if line not in skipped]
        for pair in pairs:
            results.append(compare(pair, length, settings.rounds, settings.warmup))
            print(" | ".join(comparison_row(results[-1])), flush=True)
    print(*(f"skipped {line}" for line in skipped), sep="\n")
    outputs.write_csv(CSV_COLUMNS, results)
    notes = authors_provenance(settings.authors_code) + [f"- skipped {line}" for line in skipped]
    outputs.write_page(*page(settings, results), notes)
    outputs.announce("csv,md")
