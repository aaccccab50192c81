"""``python -m lra.bench compare``: our cores against reference implementations, timed interleaved.

Each pair (ours, reference) runs forward+backward (the gradients of the output's sum with respect to
the inputs) on the same inputs in one process and one thread: after a warm-up of each, the two
alternate (ours first in even rounds, the reference first in odd ones) so that load from other
processes falls on both alike. Printed per pair: the median times, their ratio, the ratio of the
fastest steps, the range (min–max) of the per-round ratios, the median minor page faults per step
of each side, and the bytes autograd keeps for backward (``saved_tensor_bytes``: the tensors the
output's graph holds, each storage once, not counting the inputs or the module's weights; in one
process the resident-set peak mixes both implementations' allocator reuse, so it is not reported).

Page faults: glibc's malloc hands large buffers back to the OS when they are freed, and each 4 KiB
page of a new one is then mapped and zeroed on first touch. How often that happens depends on the
allocator's history, so a side that allocates many large buffers (the previous forms' (n × m) kernels)
can take a third of its time in faults in one run and almost none in the next. ``--steady-heap``
makes malloc keep freed memory (``lra.memory.keep_freed_heap``): the times are then compute and
memory traffic only, and steadier; both settings are worth a page.

- ``--against previous``: nystrom, skyformer and performer against their forms before they ran
  through fused attention calls (``lra.bench.previous_cores``), at n = 1024, 4096, 16384;
- ``--against authors --authors-code PATH``: against the Skyformer authors' classes and
  transformers' ``LongformerSelfAttention`` (``lra.bench.authors_cores``), at n = 4096.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from lra.bench.output import Outputs, number
from lra.bench.timing import time_steps
from lra.memory import keep_freed_heap, minor_page_faults
from lra.provenance import markdown_table

HELP = "forward+backward of our cores against reference implementations, timed interleaved"
Inputs = tuple[torch.Tensor, ...]
Function = Callable[..., torch.Tensor]  # of the inputs -> the output to differentiate
CPU = torch.device("cpu")


@dataclass(frozen=True)
class Pair:
    """Our implementation and a reference, both functions of the same ``make_inputs()``.

    ``weights``: tensors the two hold for the whole run (module parameters, buffers), not counted
    in what backward keeps.
    """

    label: str
    ours: Function
    reference: Function
    make_inputs: Callable[[], Inputs]
    weights: tuple[torch.Tensor, ...] = ()


@dataclass(frozen=True)
class Comparison:
    """The timed steps of both sides of one pair at one length (ms), their page faults, and what each
    keeps (bytes)."""

    label: str
    length: int
    ours_ms: list[float]
    reference_ms: list[float]
    ours_faults: list[int]
    reference_faults: list[int]
    ours_saved: int
    reference_saved: int

    @property
    def ours_median_ms(self) -> float:
        return statistics.median(self.ours_ms)

    @property
    def reference_median_ms(self) -> float:
        return statistics.median(self.reference_ms)

    @property
    def time_ratio(self) -> float:
        return self.ours_median_ms / self.reference_median_ms

    @property
    def ours_median_faults(self) -> float:
        return statistics.median(self.ours_faults)

    @property
    def reference_median_faults(self) -> float:
        return statistics.median(self.reference_faults)

    @property
    def fastest_ratio(self) -> float:
        return min(self.ours_ms) / min(self.reference_ms)

    @property
    def round_ratios(self) -> list[float]:
        return [ours / reference for ours, reference in zip(self.ours_ms, self.reference_ms, strict=True)]

    @property
    def ours_kept_mb(self) -> float:
        return self.ours_saved / 2**20

    @property
    def reference_kept_mb(self) -> float:
        return self.reference_saved / 2**20

    @property
    def kept_ratio(self) -> float | None:
        return self.ours_saved / self.reference_saved if self.reference_saved else None


def saved_tensor_bytes(run: Callable[[], torch.Tensor], exclude: Iterable[torch.Tensor] = ()) -> int:
    """Bytes of the tensors that the graph of ``run()``'s output keeps for backward.

    Walks the graph from the output and reads each node's saved tensors, so saves of branches
    dropped before ``run`` returns (a detached ``amax``) are not counted; each storage is counted
    once (a tensor saved by two operations, or views of one tensor, are one allocation); storages
    of ``exclude`` (inputs, weights) are not counted.
    """
    excluded = {t.untyped_storage().data_ptr() for t in exclude}
    storages: dict[int, int] = {}
    pending, seen = [run().grad_fn], set()
    while pending:
        node = pending.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        pending += [next_node for next_node, _ in node.next_functions]
        for tensor in node_saved_tensors(node):
            storage = tensor.untyped_storage()
            if storage.data_ptr() not in excluded:
                storages[storage.data_ptr()] = storage.nbytes()
    return sum(storages.values())


def node_saved_tensors(node: torch.autograd.graph.Node) -> list[torch.Tensor]:
    """The tensors a graph node holds for backward: a built-in node's ``_saved_*`` attributes, a
    custom ``autograd.Function``'s ``saved_tensors``."""
    values = [getattr(node, name) for name in dir(node) if name.startswith("_saved_")]
    if hasattr(node, "saved_tensors"):
        values.append(node.saved_tensors)
    flat = [item for value in values for item in (value if isinstance(value, (tuple, list)) else (value,))]
    return [item for item in flat if isinstance(item, torch.Tensor)]


def forward_backward(function: Function, inputs: Inputs) -> Callable[[], None]:
    """A step: the output of ``function(*inputs)``, then the gradients of its sum to the float inputs."""
    differentiable = [t for t in inputs if isinstance(t, torch.Tensor) and t.requires_grad]

    def step() -> None:
        torch.autograd.grad(function(*inputs).sum(), differentiable)

    return step


def compare(pair: Pair, length: int, rounds: int, warmup: int) -> Comparison:
    """Median-ready times of ``rounds`` interleaved steps of each side, and what each keeps for backward."""
    inputs = pair.make_inputs()
    steps = {
        "ours": forward_backward(pair.ours, inputs),
        "reference": forward_backward(pair.reference, inputs),
    }
    kept = {t for t in inputs if isinstance(t, torch.Tensor)} | set(pair.weights)
    saved = {
        side: saved_tensor_bytes(lambda function=function: function(*inputs), kept)
        for side, function in (("ours", pair.ours), ("reference", pair.reference))
    }
    for step in steps.values():
        for _ in range(warmup):
            step()
    times: dict[str, list[float]] = {"ours": [], "reference": []}
    faults: dict[str, list[int]] = {"ours": [], "reference": []}
    for round_index in range(rounds):
        order = ("ours", "reference") if round_index % 2 == 0 else ("reference", "ours")
        for side in order:
            before = minor_page_faults()
            times[side] += time_steps(steps[side], CPU, warmup=0, repeats=1).times_ms
            faults[side].append(minor_page_faults() - before)
    return Comparison(
        pair.label,
        length,
        times["ours"],
        times["reference"],
        faults["ours"],
        faults["reference"],
        saved["ours"],
        saved["reference"],
    )


# CSV column (a Comparison attribute) -> format
CSV_COLUMNS = {
    "label": "",
    "length": "d",
    "ours_median_ms": ".2f",
    "reference_median_ms": ".2f",
    "time_ratio": ".3f",
    "fastest_ratio": ".3f",
    "ours_median_faults": ".0f",
    "reference_median_faults": ".0f",
    "ours_kept_mb": ".2f",
    "reference_kept_mb": ".2f",
    "kept_ratio": ".3f",
}
HEADER = (
    "core",
    "n",
    "ours (ms)",
    "reference (ms)",
    "time ratio",
    "fastest-step ratio",
    "per-round ratios",
    "page faults per step (ours / reference)",
    "ours kept (MB)",
    "reference kept (MB)",
    "kept ratio",
)
REFERENCES = {
    "previous": "each core's previous form (kernels formed in memory; lra/bench/previous_cores.py)",
    "authors": "the authors' implementations (lra/bench/authors_cores.py; their code from a checkout)",
}


def comparison_row(result: Comparison) -> list[str]:
    ratios = result.round_ratios
    return [
        result.label,
        str(result.length),
        f"{result.ours_median_ms:.1f}",
        f"{result.reference_median_ms:.1f}",
        f"**{result.time_ratio:.2f}**",
        f"{result.fastest_ratio:.2f}",
        f"{min(ratios):.2f}–{max(ratios):.2f}",
        f"{result.ours_median_faults:.0f} / {result.reference_median_faults:.0f}",
        f"{result.ours_kept_mb:.1f}",
        f"{result.reference_kept_mb:.1f}",
        number(result.kept_ratio, ".2f") or "—",
    ]


def write_report(
    outputs: Outputs, results: Sequence[Comparison], skipped: Sequence[str], settings: argparse.Namespace
) -> None:
    """``compare_<against>_cpu.{csv,md}``: one row per pair and length, with what was run, where, when."""
    outputs.write_csv(CSV_COLUMNS, results)
    method = (
        f"Forward+backward, batch {settings.batch}, {settings.heads} heads, head_dim {settings.head_dim}, "
        f"{settings.threads} torch thread(s); reference: {REFERENCES[settings.against]}. {settings.warmup} "
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
    table = markdown_table(HEADER, [comparison_row(result) for result in results])
    notes = [f"- skipped {line}" for line in skipped]
    if settings.against == "authors":
        from lra.bench.authors_cores import authors_provenance

        notes = authors_provenance(Path(settings.authors_code)) + notes
    outputs.write_page(f"Our cores against {settings.against}", [method, heap], [table], notes)


def pairs_for(settings: argparse.Namespace, length: int) -> tuple[list[Pair], list[str]]:
    """The pairs of ``--against`` at ``length``, and one line per core that cannot be compared."""
    shape = (settings.batch, settings.heads, length, settings.head_dim)
    if settings.against == "previous":
        from lra.bench.previous_cores import previous_pairs

        return previous_pairs(settings.cores, shape), []
    from lra.bench.authors_cores import authors_pairs

    return authors_pairs(Path(settings.authors_code), settings.cores, shape)


def configure(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace, Sequence[str]], None]:
    parser.add_argument("--against", choices=("previous", "authors"), required=True)
    parser.add_argument("--authors-code", help="a checkout of github.com/pkuzengqi/Skyformer (for authors)")
    parser.add_argument("--cores", nargs="+", default=None, help="a subset of the cores (default: all)")
    parser.add_argument(
        "--lengths",
        type=int,
        nargs="+",
        help="default: 1024 4096 16384 against previous, 4096 against authors",
    )
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--head-dim", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument(
        "--steady-heap",
        action="store_true",
        help="keep freed memory in the C heap (glibc): times without page faults; writes *_steady_heap_*",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("results"), help="folder for compare_<against>_cpu.*"
    )
    return run


def run(settings: argparse.Namespace, argv: Sequence[str]) -> None:
    if settings.against == "authors" and not settings.authors_code:
        raise ValueError("--against authors needs --authors-code PATH (a checkout of pkuzengqi/Skyformer)")
    lengths = settings.lengths or ([1024, 4096, 16384] if settings.against == "previous" else [4096])
    benchmark = f"compare_{settings.against}" + ("_steady_heap" if settings.steady_heap else "")
    outputs = Outputs.start(settings.out, benchmark, CPU, ["compare", *argv])
    if settings.steady_heap and not keep_freed_heap():
        raise ValueError("--steady-heap needs glibc's malloc (Linux); this C library has no mallopt")
    torch.set_num_threads(settings.threads)
    results, skipped = [], []
    for length in lengths:
        pairs, skips = pairs_for(settings, length)
        skipped += [line for line in skips if line not in skipped]
        for pair in pairs:
            result = compare(pair, length, settings.rounds, settings.warmup)
            print(" | ".join(comparison_row(result)), flush=True)
            results.append(result)
    print(*(f"skipped {line}" for line in skipped), sep="\n")
    write_report(outputs, results, skipped, settings)
    print(f"wrote {outputs.path('.md')} and {outputs.path('.csv')}")
