"""What a core's backward keeps: the bytes of the tensors that autograd saves in the graph of an output,
read from the graph itself (each node's ``_saved_*`` attributes, a custom Function's
``saved_tensors``), so that a branch dropped before the output exists (a detached ``amax``) counts
nothing. Used by the check before a run (``lra.job.score_memory``), the benchmark against the authors'
code (``lra.bench.compare``) and the tests of memory growth.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch


def saved_tensor_bytes(
    run: Callable[[], torch.Tensor], exclude: Iterable[torch.Tensor] = (), at_least: int = 0
) -> int:
    """Bytes of the tensors that the graph of ``run()``'s output keeps for backward: each storage once
    (a tensor saved twice, or views of one), none of ``exclude`` (inputs, weights), none of fewer than
    ``at_least`` elements, nothing of a branch dropped before ``run`` returns (the walk starts at the
    output)."""
    excluded = {t.untyped_storage().data_ptr() for t in exclude}
    storages: dict[int, int] = {}
    # The output stays referenced during the walk: under torch 2.11 a custom Function's node gives up
    # its graph (its ``next_functions``) once its output is freed.
    output = run()
    pending, seen = [output.grad_fn], set()
    while pending:
        node = pending.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        pending += [next_node for next_node, _ in node.next_functions]
        for name in dir(node):  # a built-in node's _saved_* attributes, a custom Function's saved_tensors
            if name.startswith("_saved_") or name == "saved_tensors":
                value = getattr(node, name)
                for item in value if isinstance(value, (tuple, list)) else (value,):
                    if not isinstance(item, torch.Tensor) or item.numel() < at_least:
                        continue
                    storage = item.untyped_storage()
                    if storage.data_ptr() not in excluded:
                        storages[storage.data_ptr()] = storage.nbytes()
    return sum(storages.values())
