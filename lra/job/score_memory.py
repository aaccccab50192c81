"""Before a run whose attention keeps every query-key score: one line when the device has less free
memory than those scores need, with the settings that train the same in less.

The rule, from the registry: a core that approximates nothing (``approximates`` is None; of the
built-in ones ``standard`` and ``kernelized``) computes an (n × n) score matrix per head. Whether its
backward keeps it depends on the backend: a fused SDPA kernel keeps none, SDPA's quadratic path
keeps several (on the CPU, with attention dropout, the softmax output, the dropout mask and the
dropped matrix). So the bytes kept per score are measured (``kept_per_score``): the core runs once on
a small probe on the run's device and precision, and the tensors of at least (batch × heads × n × n)
elements that its output's graph keeps are counted (``attention_zoo.saved_memory``). Approximations
and mixers exist not to hold the scores and are never probed.

The estimate is those scores alone, a lower bound: batch (two documents an example for Retrieval) ×
heads × n × n × layers × the bytes kept per score, n counting the CLS token. Free memory:
``torch.cuda.mem_get_info`` on a GPU; on the CPU ``MemAvailable`` of /proc/meminfo, or less where
the cgroup's ``memory.max`` leaves less.
"""

from __future__ import annotations

from typing import Any

import torch

import attention_zoo
from attention_zoo.saved_memory import saved_tensor_bytes
from lra.config.records import DataRecord, ModelRecord, TrainerRecord
from lra.job.memory import cpu_free
from lra.job.trainers import AUTOCAST_DTYPES

GB = 1e9


def holds_scores(attention: str) -> bool:
    """Whether the registry's ``attention`` is a core that approximates nothing (module docstring)."""
    entry = attention_zoo.spec(attention)
    return not entry.mixer and entry.approximates is None


PROBE = (2, 2, 64, 8)  # batch, heads, n, head dim of the probe run
PROBE_PADDING = 5  # padded keys at the end of each probe sequence (the padding bias of real batches)


def kept_per_score(attention: dict[str, Any], device: torch.device, precision: str) -> float:
    """Bytes that autograd keeps per query-key score when the core of the attention node ``attention``
    runs a training step on ``device`` under ``precision`` (module docstring)."""
    batch, heads, n, head_dim = PROBE
    options = {key: value for key, value in attention.items() if not key.startswith("_")}
    core = attention_zoo.build_attention(options.pop("name"), head_dim=head_dim, num_heads=heads,
                                         seq_len=n, **options).to(device).train()  # fmt: skip
    q, k, v = (torch.randn(batch, heads, n, head_dim, device=device, requires_grad=True) for _ in range(3))
    mask = torch.ones(batch, n, dtype=torch.bool, device=device)
    mask[:, n - PROBE_PADDING :] = False
    scores = batch * heads * n * n
    half = AUTOCAST_DTYPES.get(str(precision))
    with torch.autocast(device.type, dtype=half or torch.float32, enabled=half is not None):
        return saved_tensor_bytes(lambda: core(q, k, v, mask), at_least=scores) / scores


def score_bytes(model: ModelRecord, batch_size: int, per_score: float) -> int:
    """The bytes of the (n × n) scores that a training step of ``batch_size`` examples keeps."""
    options = model.options
    n = model.seq_len + bool(options.get("cls_token"))
    sequences = batch_size * (2 if model.dual else 1)
    return round(sequences * options["num_heads"] * n * n * options["depth"] * per_score)


def free_memory(on_gpu: bool) -> tuple[int, str] | None:
    """(bytes free on the device a run trains on, where read), None where it cannot be read."""
    if on_gpu:
        return torch.cuda.mem_get_info()[0], "torch.cuda.mem_get_info"
    return cpu_free()


def on_gpu(options: dict[str, Any]) -> bool:
    """Whether ``trainer.*`` puts the run on a CUDA GPU."""
    return options["accelerator"] in ("auto", "gpu", "cuda") and torch.cuda.is_available()


def fitting_accumulation(batch_size: int, needed: int, free: int) -> int | None:
    """The least N dividing ``batch_size`` whose batches of batch_size/N need at most ``free``."""
    return next((n for n in range(1, batch_size + 1) if batch_size % n == 0 and needed / n <= free), None)


def score_memory_line(
    model: ModelRecord, batch_size: int, per_score: float, accumulate: int, free: tuple[int, str] | None
) -> str | None:
    """One line when the scores that ``model``'s attention keeps, ``per_score`` bytes each, need more
    than ``free`` (bytes, where read; None: unknown) at ``batch_size`` under ``accumulate``."""
    if free is None:
        return None
    needed = score_bytes(model, batch_size, per_score)
    available, where = free
    if needed <= available:
        return None
    n = model.seq_len + bool(model.options.get("cls_token"))
    estimate = (
        f"out of memory ahead: attention {model.attention['name']!r} keeps (n x n) scores of "
        f"{needed / GB:.1f} GB at least (batch {batch_size}, {model.options['num_heads']} heads, n={n}, "
        f"{model.options['depth']} layers, {per_score:g} bytes a score), more than the "
        f"{available / GB:.1f} GB free ({where})"
    )
    split = fitting_accumulation(batch_size, needed, available)
    if split is None:
        return f"{estimate}; even task.batch_size=1 needs more: a shorter sequence or an approximation"
    return (
        f"{estimate}; the same training in less: trainer.accumulate_grad_batches={accumulate * split} "
        f"task.batch_size={batch_size // split}"
    )


def warning_before_run(model: ModelRecord, data: DataRecord, trainer: TrainerRecord) -> str | None:
    """``score_memory_line`` of fine-tuning's batches on the run's device, probed and read only for an
    attention that holds its scores (a GPU is not touched otherwise)."""
    if not holds_scores(model.attention["name"]):
        return None
    options = trainer.options
    gpu = on_gpu(options)
    device = torch.device("cuda" if gpu else "cpu")
    with torch.random.fork_rng(devices=[device] if gpu else []):  # the run draws as without the probe
        per_score = kept_per_score(model.attention, device, options["precision"])
    if per_score == 0:
        return None
    accumulate = options.get("accumulate_grad_batches", 1)
    return score_memory_line(model, data.batch_size, per_score, accumulate, free_memory(gpu))
