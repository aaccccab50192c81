"""Time and memory published by the Skyformer and Nyströmformer papers, put beside ours by the report
and the benchmarks (their accuracies: ``lra.results.published_numbers``). Rows are keyed by our registry
names.

- Skyformer paper: Chen et al. 2021, "Skyformer: Remodel Self-Attention with Gaussian Kernel and Nyström
  Method", Table 2 (time and memory of a whole run), written below in its printed column order (Text,
  ListOps, Retrieval, Pathfinder, Image: ``SKYFORMER_TASK_ORDER``) and re-keyed by task.
- Nyströmformer paper: Xiong et al. 2021, "Nyströmformer: A Nyström-Based Algorithm for Approximating
  Self-Attention", Table 1 (one layer's memory and time).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lra.results.published_numbers import SKYFORMER_TASK_ORDER


def skyformer_columns(*values: float) -> dict[str, float]:
    """Five figures in the Skyformer paper's column order, keyed by task."""
    if len(values) != len(SKYFORMER_TASK_ORDER):
        raise ValueError(f"expected {len(SKYFORMER_TASK_ORDER)} figures, got {len(values)}")
    return dict(zip(SKYFORMER_TASK_ORDER, values, strict=True))


@dataclass(frozen=True)
class PublishedRunCost:
    """A row of Skyformer Table 2 (one V100, a whole 50k-step run): task -> hours, task -> peak GB."""

    attention: str
    hours: dict[str, float]
    peak_gb: dict[str, float]


RUN_COST_PAPER = "Skyformer paper, Table 2 (one V100, whole 50k-step run)"
RUN_COST: tuple[PublishedRunCost, ...] = (
    # hours, then peak GB, as printed: Text, ListOps, Retrieval, Pathfinder, Image
    PublishedRunCost(
        "standard",
        skyformer_columns(4.30, 2.24, 8.33, 2.57, 4.22),
        skyformer_columns(10.37, 5.37, 10.77, 5.74, 11.47),
    ),
    PublishedRunCost(
        "kernelized",
        skyformer_columns(3.91, 1.99, 7.46, 2.42, 4.05),
        skyformer_columns(5.73, 5.94, 10.46, 6.38, 6.38),
    ),
    PublishedRunCost(
        "nystrom",
        skyformer_columns(0.71, 0.71, 1.29, 1.49, 2.70),
        skyformer_columns(1.21, 1.37, 2.39, 3.35, 6.71),
    ),
    PublishedRunCost(
        "linformer",
        skyformer_columns(0.65, 0.60, 1.13, 1.09, 2.19),
        skyformer_columns(0.99, 0.99, 1.89, 1.97, 3.94),
    ),
    PublishedRunCost(
        "informer",
        skyformer_columns(1.60, 1.19, 2.91, 2.39, 3.90),
        skyformer_columns(5.12, 4.85, 5.77, 4.75, 9.51),
    ),
    PublishedRunCost(
        "performer",
        skyformer_columns(0.77, 0.73, 1.41, 1.40, 2.55),
        skyformer_columns(1.09, 1.09, 2.16, 2.20, 4.39),
    ),
    PublishedRunCost(
        "reformer",
        skyformer_columns(0.94, 0.85, 1.73, 1.70, 3.08),
        skyformer_columns(1.61, 1.61, 2.98, 3.21, 6.42),
    ),
    PublishedRunCost(
        "bigbird",
        skyformer_columns(2.00, 1.88, 3.81, 3.39, 6.53),
        skyformer_columns(2.83, 2.71, 4.97, 4.97, 9.95),
    ),
    PublishedRunCost(
        "skyformer",
        skyformer_columns(1.02, 1.29, 1.86, 2.03, 3.40),
        skyformer_columns(1.59, 1.75, 3.15, 4.13, 8.26),
    ),
)


@dataclass(frozen=True)
class PublishedLayerCost:
    """One cell of Nyströmformer Table 1: one self-attention layer, inference, per input instance, on a
    1080Ti. ``label`` is the paper's row name, ``attention`` and ``options`` our core and its options."""

    label: str
    seq_len: int
    memory_mb: float
    time_ms: float
    attention: str = "standard"
    options: dict[str, int] = field(default_factory=dict)


LAYER_COST_PAPER = "Nyströmformer paper, Table 1 (one layer, inference, per instance, 1080Ti)"
LAYER_COST_LENGTHS = (512, 1024, 2048, 4096, 8192)


def layer_cost_row(
    label: str, attention: str, options: dict[str, int], *cells: tuple[float, float]
) -> tuple[PublishedLayerCost, ...]:
    """A row of Nyströmformer Table 1: ``cells`` are (memory MB, time ms) at ``LAYER_COST_LENGTHS``."""
    if len(cells) != len(LAYER_COST_LENGTHS):
        raise ValueError(f"{label}: expected {len(LAYER_COST_LENGTHS)} cells, got {len(cells)}")
    return tuple(
        PublishedLayerCost(label, n, memory, time, attention, options)
        for n, (memory, time) in zip(LAYER_COST_LENGTHS, cells, strict=True)
    )


LAYER_COST: tuple[PublishedLayerCost, ...] = (
    # (memory MB, time ms) at n = 512, 1024, 2048, 4096, 8192
    *layer_cost_row("Transformer", "standard", {},
                    (54, 0.8), (186, 2.4), (685, 10.0), (2620, 32.9), (10233, 155.4)),
    *layer_cost_row("Linformer-256", "linformer", {"proj_dim": 256},
                    (41, 0.7), (81, 1.3), (165, 2.7), (366, 5.3), (635, 11.3)),
    *layer_cost_row("Longformer-257", "longformer", {"window": 257},
                    (32.2, 2.4), (65, 4.6), (130, 9.2), (263, 18.5), (455, 36.2)),
    *layer_cost_row("Nyströmformer-64", "nystrom", {"num_landmarks": 64},
                    (35, 0.7), (63, 1.3), (118, 2.7), (229, 5.9), (450, 12.3)),
    *layer_cost_row("Nyströmformer-32", "nystrom", {"num_landmarks": 32},
                    (26, 0.6), (49, 1.2), (96, 2.6), (193, 5.6), (383, 11.5)),
)  # fmt: skip
