"""Two implementations of one function timed interleaved in one process, and what each keeps for backward.

A ``Pair`` (ours, a reference) runs forward+backward (the gradients of the output's sum with respect to
the inputs) on the same inputs: after a warm-up of each, the two alternate (ours first in even rounds,
the reference first in odd ones), so that load from other processes falls on both alike. Per side: the
step times, the minor page faults per step, and the bytes the output's graph keeps for backward
(``saved_tensor_bytes``; a resident-set peak cannot separate two implementations in one process).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch

from lra.memory import minor_page_faults

Inputs = tuple[torch.Tensor, ...]
Function = Callable[..., torch.Tensor]  # of the inputs -> the output to differentiate
SIDES = ("ours", "reference")


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
    """One pair at one length: each side's median step (ms), median minor page faults per step and what
    its graph keeps (MB); ratios ours ÷ reference of the medians, of the fastest steps, of what is kept,
    and the lowest and highest ratio within a round."""

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


def node_saved_tensors(node: torch.autograd.graph.Node) -> list[torch.Tensor]:
    """The tensors a graph node holds for backward: a built-in node's ``_saved_*`` attributes, a
    custom ``autograd.Function``'s ``saved_tensors``."""
    values = [getattr(node, name) for name in dir(node) if name.startswith("_saved_")]
    if hasattr(node, "saved_tensors"):
        values.append(node.saved_tensors)
    flat = [item for value in values for item in (value if isinstance(value, (tuple, list)) else (value,))]
    return [item for item in flat if isinstance(item, torch.Tensor)]


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


def forward_backward(function: Function, inputs: Inputs) -> Callable[[], None]:
    """A step: the output of ``function(*inputs)``, then the gradients of its sum to the float inputs."""
    differentiable = [t for t in inputs if isinstance(t, torch.Tensor) and t.requires_grad]

    def step() -> None:
        torch.autograd.grad(function(*inputs).sum(), differentiable)

    return step


def compare(pair: Pair, length: int, rounds: int, warmup: int) -> Comparison:
    """``rounds`` interleaved steps of each side after ``warmup`` of each; what each keeps for backward."""
    inputs = pair.make_inputs()
    functions = {"ours": pair.ours, "reference": pair.reference}
    steps = {side: forward_backward(function, inputs) for side, function in functions.items()}
    kept = {t for t in inputs if isinstance(t, torch.Tensor)} | set(pair.weights)
    saved = {
        side: saved_tensor_bytes(lambda function=function: function(*inputs), kept) / 2**20
        for side, function in functions.items()
    }
    for step in steps.values():
        for _ in range(warmup):
            step()
    times: dict[str, list[float]] = {side: [] for side in SIDES}
    faults: dict[str, list[int]] = {side: [] for side in SIDES}
    for round_index in range(rounds):
        for side in SIDES if round_index % 2 == 0 else SIDES[::-1]:
            before = minor_page_faults()
            begin = time.perf_counter()
            steps[side]()
            times[side].append(1000 * (time.perf_counter() - begin))
            faults[side].append(minor_page_faults() - before)
    median = {side: statistics.median(times[side]) for side in SIDES}
    ratios = [ours / reference for ours, reference in zip(times["ours"], times["reference"], strict=True)]
    return Comparison(
        pair.label, length, median["ours"], median["reference"], median["ours"] / median["reference"],
        min(times["ours"]) / min(times["reference"]), (min(ratios), max(ratios)),
        statistics.median(faults["ours"]), statistics.median(faults["reference"]), saved["ours"],
        saved["reference"], saved["ours"] / saved["reference"] if saved["reference"] else None,
    )  # fmt: skip
