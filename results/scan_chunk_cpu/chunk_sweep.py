"""One mamba layer's forward+backward time on the CPU against ``scan_chunk``, at each task's batch ×
length, on one torch thread and on two: ``python results/scan_chunk_cpu/chunk_sweep.py`` prints the
tables of README.md (median ms of 3 steps after one, the chunks taking turns step by step)."""

import time

import torch

from lra.bench.efficiency_measure import BenchConfig, layer_step

SHAPES = ((1, 4096), (4, 2048), (16, 4000), (32, 2000), (128, 1024))  # batch, tokens
CHUNKS = (8, 16, 32, 64, 128, 256, 512)
MAX_POSITIONS = 4096  # chunk × batch: larger chunks are left out at large batches


def sweep(threads: int, batch: int, length: int) -> str:
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    chunks = [c for c in CHUNKS if c * batch <= MAX_POSITIONS]
    steps = {
        c: layer_step(BenchConfig("mamba", length, batch, options={"scan_chunk": c}), torch.device("cpu"))
        for c in chunks
    }
    times: dict[int, list[float]] = {c: [] for c in chunks}
    for round_ in range(4):
        for chunk, step in steps.items():
            start = time.perf_counter()
            step()
            if round_:
                times[chunk].append(time.perf_counter() - start)
    medians = {c: sorted(t)[1] * 1e3 for c, t in times.items()}
    best = min(medians, key=medians.get)
    cells = [
        f"**{medians[c]:.0f}**" if c == best else f"{medians[c]:.0f}" if c in medians else "" for c in CHUNKS
    ]
    return f"| {threads} | {batch} × {length} | " + " | ".join(cells) + " |"


if __name__ == "__main__":
    print("| threads | batch × tokens | " + " | ".join(f"chunk {c}" for c in CHUNKS) + " |")
    print("|---|---|" + "---|" * len(CHUNKS))
    for threads in (1, 2):
        for batch, length in SHAPES:
            print(sweep(threads, batch, length), flush=True)
