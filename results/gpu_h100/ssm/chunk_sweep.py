"""One mamba layer's forward+backward time and peak memory against ``scan_chunk`` on a GPU, beside
standard and s4d: ``python results/gpu_h100/ssm/chunk_sweep.py`` prints the table of README.md."""

import time

import torch

from lra.bench.efficiency_measure import BenchConfig, layer_step

DEVICE = torch.device("cuda")
CHUNKS = (128, 512, 1024, 2048, 4096)


def measure(name: str, length: int, options: dict) -> str:
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    step = layer_step(BenchConfig(name, length, options=options), DEVICE)
    base = torch.cuda.memory_allocated()
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(10):
        start = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    peak = (torch.cuda.max_memory_allocated() - base) / 2**20
    chunk = options.get("scan_chunk", "")
    return f"| {length} | {name} | {chunk} | {sorted(times)[5] * 1e3:.2f} | {peak:.0f} |"


if __name__ == "__main__":
    print("| tokens | layer | scan_chunk | ms fwd+bwd (median of 10) | peak MiB above inputs |")
    print("|---|---|---|---|---|")
    for length in (1024, 4096, 16384):
        configs = [("standard", {}), ("s4d", {})] + [("mamba", {"scan_chunk": c}) for c in CHUNKS]
        for name, options in configs:
            print(measure(name, length, options), flush=True)
