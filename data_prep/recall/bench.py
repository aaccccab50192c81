"""Time to draw one batch of each recall task: ``python -m data_prep.recall.bench [--batch 64] [--tier]``.

Shapes: MQAR at the CPU tier's cell (vocabulary 128, length 64, 8 pairs) and at Zoology's
default vocabulary; every other task at its source's defaults. ``--tier``: the shapes of
``experiment=diagnostics_cpu`` (MQAR's cell) and ``diagnostics_cpu_mad`` (MAD's tasks at 64 tokens at
most). Prints the median over repeats of one ``task.sample(rng, batch)``, to set beside the training
step's time.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from data_prep.recall.registry import TASKS, build

MQAR_CELL = ("mqar", dict(vocab_size=128, input_seq_len=64, num_kv_pairs=8))
CASES: list[tuple[str, dict]] = [
    MQAR_CELL,
    ("mqar", dict()),
    *((name, dict()) for name in TASKS if name != "mqar"),
]
SHORTENED = ("in_context_recall", "fuzzy_in_context_recall", "noisy_in_context_recall", "selective_copying")
TIER: list[tuple[str, dict]] = [
    MQAR_CELL,
    *((name, dict(seq_len=64)) for name in SHORTENED),
    ("compression", dict()),
    ("memorization", dict()),
]


def median_seconds(name: str, options: dict, batch: int, repeats: int) -> float:
    """Median wall time of one ``sample`` of ``batch`` examples, after one warm-up draw."""
    task, rng = build(name, **options), np.random.default_rng(0)
    task.sample(rng, batch)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        task.sample(rng, batch)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--tier", action="store_true", help="the CPU tier's shapes (diagnostics_cpu, _mad)")
    args = parser.parse_args(argv)
    print(f"batch {args.batch}, median of {args.repeats} draws")
    print(f"{'task':<26}{'length':>8}{'vocab':>8}{'ms':>10}  options")
    for name, options in TIER if args.tier else CASES:
        task = build(name, **options)
        seconds = median_seconds(name, options, args.batch, args.repeats)
        shown = ", ".join(f"{k}={v}" for k, v in options.items()) or "defaults"
        print(f"{name:<26}{task.seq_len:>8}{task.vocab_size:>8}{1000 * seconds:>10.3f}  {shown}")


if __name__ == "__main__":
    main()
