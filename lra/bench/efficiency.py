"""Time and peak memory of forward+backward against sequence length, per attention.

Two workloads (``--scopes``): ``layer`` = one ``MultiHeadSelfAttention(dim, heads, core)`` on
(batch, n, dim) inputs; ``encoder`` = the whole ``lra.model.LRAClassifier`` on (batch, n) tokens
with a cross-entropy loss. Each configuration is warmed up, then timed ``repeats`` times (fewer
once the timed steps add up to ``--time-budget-s``, at least once); the median is kept. Peak
memory is measured above a baseline taken after the model and inputs exist and after one step of
the same workload at ``PRIME_SEQ_LEN`` tokens, so that one-time costs (kernel code paged in on
first use, thread pools, allocator arenas, library workspaces) do not count as the configuration's:

- CUDA: synchronised timing, ``reset_peak_memory_stats`` then ``max_memory_allocated`` minus the
  allocated bytes at the baseline;
- CPU: peak resident set size. The kernel's high-water mark (VmHWM) is reset through
  ``/proc/self/clear_refs`` at the baseline, so the peak is the measured step's own. By default every
  CPU configuration runs in a fresh subprocess (``--isolation subprocess``), so no allocator cache or
  fragmentation from an earlier configuration shifts it, an address-space limit (``--mem-limit-mb``)
  turns a too-large configuration into a recorded ``oom`` instead of a swapping machine, and a hung one
  is ended by ``--timeout-s``.

Every configuration gives one row ``attention,seq_len,batch,time_ms,peak_mem_mb,status`` with status
``ok``, ``oom``, ``timeout``, ``error`` or ``skipped`` (a longer sequence of an attention that already
failed at a shorter one, or whose step there took over ``--max-step-s``, is not attempted).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import resource
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path

import torch
import torch.nn.functional as F

import attention_zoo
from lra.bench.baselines import NAIVE, bench_names, build_core
from lra.memory import proc_status_kb, reset_peak_rss
from lra.provenance import machine_description, markdown_table, rerun_command
from lra.published import LAYER_COST, LAYER_COST_PAPER

CSV_COLUMNS = ("attention", "seq_len", "batch", "time_ms", "peak_mem_mb", "status")
DEFAULT_LENGTHS = (512, 1024, 2048, 4096, 8192, 16384)
BASELINES = ("standard", NAIVE)
ENCODER_VOCAB, ENCODER_CLASSES = 257, 10  # byte tokens + pad, as the Text task
REPO_ROOT = Path(__file__).resolve().parents[2]
PRIME_SEQ_LEN = 64


@dataclass(frozen=True)
class BenchConfig:
    """One measured configuration."""

    attention: str
    seq_len: int
    batch: int = 1
    scope: str = "layer"
    dim: int = 64
    heads: int = 2
    warmup: int = 1
    repeats: int = 5
    device: str = "cpu"
    threads: int | None = None
    time_budget_s: float | None = None


@dataclass(frozen=True)
class Measurement:
    """One row of results; ``detail`` (not in the CSV) says why a row is not ``ok``."""

    attention: str
    seq_len: int
    batch: int
    time_ms: float | None
    peak_mem_mb: float | None
    status: str
    scope: str = "layer"
    detail: str = ""
    timed_steps: int = 0

    @classmethod
    def failed(cls, config: BenchConfig, status: str, detail: str) -> Measurement:
        return cls(config.attention, config.seq_len, config.batch, None, None, status, config.scope, detail)


# --- workloads: a config -> a function that runs one forward+backward step ---------------------


def layer_step(config: BenchConfig, device: torch.device) -> Callable[[], None]:
    """One attention layer: x (batch, n, dim) -> MultiHeadSelfAttention -> sum -> backward."""
    core = build_core(config.attention, config.dim // config.heads, config.heads, config.seq_len)
    layer = attention_zoo.MultiHeadSelfAttention(config.dim, config.heads, core).to(device)
    x = torch.randn(config.batch, config.seq_len, config.dim, device=device, requires_grad=True)

    def step() -> None:
        layer.zero_grad(set_to_none=True)
        x.grad = None
        layer(x).sum().backward()

    return step


def encoder_step(config: BenchConfig, device: torch.device) -> Callable[[], None]:
    """The whole encoder: tokens (batch, n) -> LRAClassifier -> cross-entropy -> backward."""
    from lra.model import LRAClassifier

    model = LRAClassifier(
        vocab_size=ENCODER_VOCAB,
        num_classes=ENCODER_CLASSES,
        seq_len=config.seq_len,
        attention=partial(build_core, config.attention),
        dim=config.dim,
        num_heads=config.heads,
    ).to(device)
    tokens = torch.randint(1, ENCODER_VOCAB, (config.batch, config.seq_len), device=device)
    lengths = torch.full((config.batch,), config.seq_len, device=device)
    labels = torch.randint(0, ENCODER_CLASSES, (config.batch,), device=device)

    def step() -> None:
        model.zero_grad(set_to_none=True)
        F.cross_entropy(model(tokens, lengths), labels).backward()

    return step


WORKLOADS: dict[str, Callable[[BenchConfig, torch.device], Callable[[], None]]] = {
    "layer": layer_step,
    "encoder": encoder_step,
}


# --- probes: synchronisation and peak memory per device type ------------------------------------


class CpuProbe:
    """Peak RSS above the RSS at ``start`` (VmHWM reset through /proc/self/clear_refs)."""

    def synchronize(self) -> None:
        """CPU work is synchronous."""

    def start(self) -> None:
        if not reset_peak_rss():
            raise OSError("cannot reset the peak RSS (/proc/self/clear_refs); CPU memory needs Linux")
        self.baseline_kb = proc_status_kb("VmRSS")

    def peak_mb(self) -> float:
        return (proc_status_kb("VmHWM") - self.baseline_kb) / 1024


class CudaProbe:
    """``max_memory_allocated`` above the bytes allocated at ``start``."""

    def synchronize(self) -> None:
        torch.cuda.synchronize()

    def start(self) -> None:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        self.baseline = torch.cuda.memory_allocated()

    def peak_mb(self) -> float:
        return (torch.cuda.max_memory_allocated() - self.baseline) / 2**20


PROBES: dict[str, type[CpuProbe] | type[CudaProbe]] = {"cpu": CpuProbe, "cuda": CudaProbe}


def is_out_of_memory(error: BaseException) -> bool:
    """True for CUDA OOM, Python's MemoryError and the CPU allocator's failure."""
    if isinstance(error, (torch.OutOfMemoryError, MemoryError)):
        return True
    return isinstance(error, RuntimeError) and "can't allocate memory" in str(error)


def measure(config: BenchConfig) -> Measurement:
    """Run ``config`` in this process: warm-up, then the median of up to ``repeats`` timed steps."""
    device = torch.device(config.device)
    probe = PROBES[device.type]()
    if config.threads is not None:
        torch.set_num_threads(config.threads)
    try:
        torch.manual_seed(0)
        build = WORKLOADS[config.scope]
        build(replace(config, seq_len=min(config.seq_len, PRIME_SEQ_LEN)), device)()
        step = build(config, device)
        probe.start()
        for _ in range(config.warmup):
            step()
        times: list[float] = []
        budget_ms = math.inf if config.time_budget_s is None else 1000 * config.time_budget_s
        while len(times) < config.repeats and (not times or sum(times) < budget_ms):
            probe.synchronize()
            begin = time.perf_counter()
            step()
            probe.synchronize()
            times.append(1000 * (time.perf_counter() - begin))
        peak = probe.peak_mb()
    except Exception as error:  # a failing configuration is a result, not a crash
        status = "oom" if is_out_of_memory(error) else "error"
        return Measurement.failed(config, status, f"{type(error).__name__}: {error}"[:300])
    finally:
        if device.type == "cuda":
            torch.cuda.empty_cache()
    median = statistics.median(times)
    return Measurement(
        config.attention,
        config.seq_len,
        config.batch,
        median,
        peak,
        "ok",
        config.scope,
        timed_steps=len(times),
    )


def measure_in_subprocess(config: BenchConfig, timeout_s: float, mem_limit_mb: int | None) -> Measurement:
    """Run ``config`` in a fresh interpreter (``python -m lra.bench.efficiency CONFIG_JSON``).

    A child killed by SIGKILL (the kernel's OOM killer) counts as ``oom``.
    """
    command = [sys.executable, "-m", "lra.bench.efficiency", json.dumps(asdict(config))]
    if mem_limit_mb is not None:
        command += ["--mem-limit-mb", str(mem_limit_mb)]
    try:
        child = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, cwd=REPO_ROOT)
    except subprocess.TimeoutExpired:
        return Measurement.failed(config, "timeout", f"no result within {timeout_s:g} s")
    if child.returncode == -signal.SIGKILL:
        return Measurement.failed(config, "oom", "killed by SIGKILL (out of memory)")
    if child.returncode != 0:
        return Measurement.failed(config, "error", child.stderr.strip()[-300:])
    return Measurement(**json.loads(child.stdout.strip().splitlines()[-1]))


def limit_address_space(extra_mb: int) -> None:
    """Let this process map at most ``extra_mb`` MiB more than it has now (allocations beyond fail)."""
    limit = proc_status_kb("VmSize") * 1024 + extra_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def worker_main(argv: Sequence[str]) -> None:
    """Child side of ``measure_in_subprocess``: prints the measurement as one JSON line."""
    parser = argparse.ArgumentParser(prog="python -m lra.bench.efficiency")
    parser.add_argument("config", help="BenchConfig as JSON")
    parser.add_argument("--mem-limit-mb", type=int, default=None)
    args = parser.parse_args(argv)
    config = BenchConfig(**json.loads(args.config))
    if args.mem_limit_mb is not None:
        limit_address_space(args.mem_limit_mb)
    print(json.dumps(asdict(measure(config))), flush=True)


# --- the sweep -----------------------------------------------------------------------------------


def sweep(
    configs: Sequence[BenchConfig],
    run_one: Callable[[BenchConfig], Measurement],
    max_step_s: float | None = None,
) -> list[Measurement]:
    """Measure every config in order (lengths ascending), printing each row.

    Once an (attention, scope) fails at some length, or one of its steps takes longer than
    ``max_step_s``, its longer configurations are recorded as ``skipped`` with the reason.
    """
    rows: list[Measurement] = []
    stopped: dict[tuple[str, str], str] = {}
    for config in configs:
        reason = stopped.get((config.scope, config.attention))
        if reason is not None:
            row = Measurement.failed(config, "skipped", reason)
        else:
            row = run_one(config)
            if row.status != "ok":
                stopped[(config.scope, config.attention)] = f"{row.status} at seq_len {row.seq_len}"
            elif max_step_s is not None and row.time_ms > 1000 * max_step_s:
                stopped[(config.scope, config.attention)] = (
                    f"a step took {row.time_ms / 1000:.1f} s at seq_len {row.seq_len} "
                    f"(over --max-step-s {max_step_s:g})"
                )
        rows.append(row)
        print(format_progress(row), flush=True)
    return rows


def format_progress(row: Measurement) -> str:
    figures = (
        f"{row.time_ms:10.1f} ms {row.peak_mem_mb:10.1f} MB ({row.timed_steps} timed)"
        if row.status == "ok"
        else f"{row.status.upper()} {row.detail}"
    )
    return f"[{row.scope:7}] {row.attention:10} n={row.seq_len:6} batch={row.batch}: {figures}"


# --- outputs -------------------------------------------------------------------------------------


def csv_path(out: Path, device: str, scope: str) -> Path:
    """``efficiency_<device>.csv`` for the layer, ``efficiency_<device>_<scope>.csv`` otherwise."""
    return out / (f"efficiency_{device}.csv" if scope == "layer" else f"efficiency_{device}_{scope}.csv")


def write_csv(path: Path, rows: Sequence[Measurement]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for row in rows:
            writer.writerow(
                [
                    row.attention,
                    row.seq_len,
                    row.batch,
                    "" if row.time_ms is None else f"{row.time_ms:.3f}",
                    "" if row.peak_mem_mb is None else f"{row.peak_mem_mb:.2f}",
                    row.status,
                ]
            )


def _lookup(rows: Sequence[Measurement]) -> dict[tuple[str, int], Measurement]:
    return {(row.attention, row.seq_len): row for row in rows}


def _ratio(baseline: Measurement | None, row: Measurement, field: str) -> str:
    """baseline ÷ row for ``field`` (``×k`` = k times less), or '—' when either is missing."""
    if baseline is None or baseline.status != "ok" or row.status != "ok":
        return "—"
    mine, theirs = getattr(row, field), getattr(baseline, field)
    return f"×{theirs / mine:.3g}" if mine > 0 else "—"


def scope_tables(
    rows: Sequence[Measurement], lengths: Sequence[int], attentions: Sequence[str], repeats: int
) -> str:
    """Markdown: time, memory, ratios to both baselines and memory growth for one scope."""
    table = _lookup(rows)

    def cell(name: str, n: int, field: str, fmt: str) -> str:
        row = table.get((name, n))
        if row is None:
            return ""
        if row.status != "ok":
            return row.status
        fewer = f" ({row.timed_steps}×)" if field == "time_ms" and row.timed_steps < repeats else ""
        return format(getattr(row, field), fmt) + fewer

    header = ["attention", *(f"n={n}" for n in lengths)]
    parts = [
        "Time per forward+backward (ms, median):",
        markdown_table(header, [[a, *(cell(a, n, "time_ms", ".1f") for n in lengths)] for a in attentions]),
        "Peak memory above baseline (MB):",
        markdown_table(
            header, [[a, *(cell(a, n, "peak_mem_mb", ".1f") for n in lengths)] for a in attentions]
        ),
    ]
    for baseline in BASELINES:
        ratio_rows = []
        for name in attentions:
            ratios = []
            for n in lengths:
                row, base = table.get((name, n)), table.get((baseline, n))
                ratios.append(
                    ""
                    if row is None
                    else f"{_ratio(base, row, 'time_ms')} / {_ratio(base, row, 'peak_mem_mb')}"
                )
            ratio_rows.append([name, *ratios])
        parts += [
            f"Ratio to `{baseline}` (its time ÷ this time / its memory ÷ this memory; ×k = k times less):",
            markdown_table(header, ratio_rows),
        ]
    pairs = [(n // 8, n) for n in lengths if n // 8 in lengths and n % 8 == 0]
    if pairs:
        growth_rows = []
        for name in attentions:
            growth = []
            for short, long in pairs:
                a, b = table.get((name, short)), table.get((name, long))
                ok = a is not None and b is not None and a.status == b.status == "ok" and a.peak_mem_mb > 0
                growth.append(f"×{b.peak_mem_mb / a.peak_mem_mb:.3g}" if ok else "—")
            growth_rows.append([name, *growth])
        parts += [
            "Memory growth for ×8 length (linear: ×8, quadratic: ×64):",
            markdown_table(["attention", *(f"{s}→{n}" for s, n in pairs)], growth_rows),
        ]
    failures = [row for row in rows if row.status != "ok"]
    if failures:
        parts += ["Configurations without a figure:"]
        parts += [
            f"- `{r.attention}` n={r.seq_len}: {r.status} ({' '.join(r.detail.split())})" for r in failures
        ]
    return "\n\n".join(parts)


def write_markdown(
    path: Path,
    rows_by_scope: dict[str, list[Measurement]],
    settings: argparse.Namespace,
    device: torch.device,
    machine: list[str],
    command: str,
) -> None:
    lines = [
        f"# Efficiency on {device.type}",
        "",
        "Forward+backward of one attention layer (`layer`: MultiHeadSelfAttention, dim "
        f"{settings.dim}, {settings.heads} heads) and of the whole encoder (`encoder`: LRAClassifier), "
        f"batch {settings.batch}, {settings.warmup} warm-up step(s) then the median of {settings.repeats} "
        f"timed steps (fewer, at least one, once they add up to {settings.time_budget_s:g} s: "
        "`(k×)` in the time table). `naive` is softmax attention with QKᵀ materialised (the papers' "
        "Transformer); `standard` is PyTorch's scaled_dot_product_attention. Each attention keeps its "
        "paper defaults (options in DESIGN.md).",
        "",
        f"Memory: {MEMORY_METHODS[device.type]} Isolation: {settings.isolation}"
        + (f", address-space limit {settings.mem_limit_mb} MB" if settings.mem_limit_mb else "")
        + f", timeout {settings.timeout_s:g} s per configuration; torch threads per measurement: "
        + f"{settings.threads or 'torch default'}.",
        "",
        *machine,
        f"- command: `{command}`",
    ]
    for scope, rows in rows_by_scope.items():
        attentions = list(dict.fromkeys(row.attention for row in rows))
        lines += ["", f"## {scope}", "", scope_tables(rows, settings.lengths, attentions, settings.repeats)]
    lines += ["", "## Published, for comparison", "", published_layer_costs()]
    path.write_text("\n".join(lines) + "\n")


def published_layer_costs() -> str:
    """The Nyströmformer paper's one-layer figures, with their ratios to its standard attention."""
    baseline = LAYER_COST[0]
    rows = [
        [c.label, c.seq_len, f"{c.time_ms:g}", f"{c.memory_mb:g}",
         f"×{baseline.time_ms / c.time_ms:.3g} / ×{baseline.memory_mb / c.memory_mb:.3g}"]
        for c in LAYER_COST
    ]  # fmt: skip
    header = ["attention", "n", "time (ms)", "memory (MB)", f"ratio to {baseline.label} (time / memory)"]
    return f"{LAYER_COST_PAPER}:\n\n" + markdown_table(header, rows)


BASELINE_POINT = (
    "after the model and inputs were built and one step of the same workload at "
    f"{PRIME_SEQ_LEN} tokens ran (one-time costs such as kernel code paged in on first use are not counted)"
)
MEMORY_METHODS = {
    "cpu": f"peak RSS (VmHWM, reset via /proc/self/clear_refs) above the RSS {BASELINE_POINT}.",
    "cuda": f"torch.cuda.max_memory_allocated above memory_allocated {BASELINE_POINT}.",
}


def write_plot(path: Path, rows_by_scope: dict[str, list[Measurement]]) -> None:
    """Log–log plot: one row of panels per scope, time and memory against length."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = dict.fromkeys(row.attention for rows in rows_by_scope.values() for row in rows)
    colors = {name: f"C{i}" for i, name in enumerate(names)}  # the same colour in every panel
    fig, axes = plt.subplots(len(rows_by_scope), 2, figsize=(11, 4 * len(rows_by_scope)), squeeze=False)
    for (scope, rows), (ax_time, ax_mem) in zip(rows_by_scope.items(), axes, strict=True):
        for name in dict.fromkeys(row.attention for row in rows):
            ok = [r for r in rows if r.attention == name and r.status == "ok"]
            style = {"color": colors[name], "linestyle": "--" if name in BASELINES else "-", "marker": "o"}
            for ax, field in ((ax_time, "time_ms"), (ax_mem, "peak_mem_mb")):
                points = [(r.seq_len, getattr(r, field)) for r in ok if getattr(r, field) > 0]  # log axes
                if points:
                    ax.plot(*zip(*points, strict=True), label=name, **style)
        for ax, label in ((ax_time, "time (ms)"), (ax_mem, "peak memory (MB)")):
            ax.set(xlabel="sequence length", ylabel=label, title=f"{scope}: {label}")
            if ax.has_data():
                ax.set(xscale="log", yscale="log")
                ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
                ax.legend(fontsize=8)
            ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# --- command line --------------------------------------------------------------------------------


def configure(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace, Sequence[str]], None]:
    """Arguments of ``python -m lra.bench efficiency``."""
    parser.add_argument(
        "--attentions", nargs="+", default=None, help="default: every core and the naive baseline"
    )
    parser.add_argument("--lengths", nargs="+", type=int, default=list(DEFAULT_LENGTHS))
    parser.add_argument("--scopes", nargs="+", choices=sorted(WORKLOADS), default=["layer", "encoder"])
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    parser.add_argument(
        "--isolation",
        choices=("subprocess", "inprocess"),
        default=None,
        help="default: subprocess on CPU (each configuration in a fresh interpreter), inprocess on CUDA",
    )
    parser.add_argument(
        "--time-budget-s",
        type=float,
        default=30.0,
        help="stop repeating once the timed steps of a configuration add up to this (at least one is timed)",
    )
    parser.add_argument(
        "--max-step-s",
        type=float,
        default=None,
        help="skip the longer lengths of an attention once one of its steps took longer than this",
    )
    parser.add_argument("--timeout-s", type=float, default=300, help="per configuration (subprocess only)")
    parser.add_argument(
        "--mem-limit-mb",
        type=int,
        default=None,
        help="address-space limit per subprocess above its start (default on CPU: 60%% of available memory)",
    )
    parser.add_argument("--out", type=Path, default=Path("results"))
    return run


def _available_memory_mb() -> int:
    match = re.search(r"^MemAvailable:\s+(\d+) kB", Path("/proc/meminfo").read_text(), re.MULTILINE)
    if match is None:
        raise OSError("/proc/meminfo has no MemAvailable; pass --mem-limit-mb")
    return int(match.group(1)) // 1024


def run(args: argparse.Namespace, argv: Sequence[str]) -> None:
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    machine = machine_description(device)  # before any measurement changes torch's thread count
    valid = bench_names()
    attentions = args.attentions or valid
    unknown = [name for name in attentions if name not in valid]
    if unknown:
        raise ValueError(f"unknown attention(s) {unknown}; valid: {', '.join(valid)}")
    if args.dim % args.heads:
        raise ValueError(f"--dim ({args.dim}) must be divisible by --heads ({args.heads})")
    args.isolation = args.isolation or ("subprocess" if device.type == "cpu" else "inprocess")
    if args.isolation == "subprocess" and device.type == "cpu" and args.mem_limit_mb is None:
        args.mem_limit_mb = math.floor(0.6 * _available_memory_mb())
    run_one: Callable[[BenchConfig], Measurement] = (
        partial(measure_in_subprocess, timeout_s=args.timeout_s, mem_limit_mb=args.mem_limit_mb)
        if args.isolation == "subprocess"
        else measure
    )
    args.lengths = sorted(args.lengths)
    base = BenchConfig(
        attention="",
        seq_len=0,
        batch=args.batch,
        dim=args.dim,
        heads=args.heads,
        warmup=args.warmup,
        repeats=args.repeats,
        device=str(device),
        threads=args.threads,
        time_budget_s=args.time_budget_s,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    rows_by_scope: dict[str, list[Measurement]] = {}
    for scope in args.scopes:
        configs = [
            replace(base, attention=name, seq_len=n, scope=scope) for name in attentions for n in args.lengths
        ]
        rows_by_scope[scope] = sweep(configs, run_one, args.max_step_s)
        write_csv(csv_path(args.out, device.type, scope), rows_by_scope[scope])
    command = rerun_command("lra.bench", ["efficiency", *argv])
    write_markdown(args.out / f"efficiency_{device.type}.md", rows_by_scope, args, device, machine, command)
    write_plot(args.out / f"efficiency_{device.type}.png", rows_by_scope)
    print(f"wrote {args.out}/efficiency_{device.type}.{{csv,md,png}}")


if __name__ == "__main__":
    worker_main(sys.argv[1:])
