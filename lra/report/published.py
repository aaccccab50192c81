"""Numbers published by the LRA, Nyströmformer and Skyformer papers, put beside ours by the report.

Accuracies are percentages in the task order of ``TASKS`` (the Skyformer paper's own order, Text,
ListOps, Retrieval, Pathfinder, Image, is re-ordered here); rows are keyed by our registry names.
"""

from __future__ import annotations

from dataclasses import dataclass

TASKS = ("listops", "text", "retrieval", "image", "pathfinder")


@dataclass(frozen=True)
class PublishedAccuracy:
    """One paper's LRA accuracy table. ``rows``: attention -> accuracy (%) per task of ``TASKS``;
    ``averages``: attention -> the average as printed in the paper (absent where it prints none)."""

    paper: str
    rows: dict[str, tuple[float, float, float, float, float]]
    averages: dict[str, float]


ACCURACY: tuple[PublishedAccuracy, ...] = (
    PublishedAccuracy(
        paper="LRA paper (Tay et al. 2020), JAX",
        rows={
            "standard": (36.37, 64.27, 57.46, 42.44, 71.40),
            "linformer": (35.70, 53.94, 52.27, 38.56, 76.34),
            "reformer": (37.27, 56.10, 53.40, 38.07, 68.50),
            "performer": (18.01, 65.40, 53.82, 42.77, 77.05),
        },
        averages={"standard": 54.39, "linformer": 51.36, "reformer": 50.67, "performer": 51.41},
    ),
    PublishedAccuracy(
        paper="Nyströmformer paper (Xiong et al. 2021), PyTorch",
        rows={
            "standard": (37.10, 65.02, 79.35, 38.20, 74.16),
            "reformer": (19.05, 64.88, 78.64, 43.29, 69.36),
            "linformer": (37.25, 55.91, 79.37, 37.84, 67.60),
            "performer": (18.80, 63.81, 78.62, 37.07, 69.87),
            "nystrom": (37.15, 65.52, 79.56, 41.58, 70.94),
        },
        averages={
            "standard": 58.77,
            "reformer": 55.04,
            "linformer": 55.59,
            "performer": 53.63,
            "nystrom": 58.95,
        },
    ),
    PublishedAccuracy(
        paper="Skyformer paper (Chen et al. 2021), 3 seeds",
        rows={
            "standard": (38.37, 61.95, 80.69, 40.57, 65.26),
            "kernelized": (38.78, 60.22, 81.77, 41.29, 70.73),
            "nystrom": (38.51, 64.83, 80.52, 41.30, 69.48),
            "linformer": (37.45, 58.93, 78.19, 37.96, 60.93),
            "performer": (38.02, 64.19, 80.04, 41.43, 66.30),
            "reformer": (37.68, 62.93, 78.99, 48.87, 66.49),
            "skyformer": (38.69, 64.70, 82.06, 40.77, 70.73),
        },
        averages={},
    ),
)


@dataclass(frozen=True)
class PublishedRunCost:
    """Skyformer Table 2 (one V100, a whole 50k-step run): task -> hours, task -> peak GB or None."""

    attention: str
    hours: dict[str, float]
    peak_gb: dict[str, float] | None


RUN_COST_PAPER = "Skyformer paper, Table 2 (one V100, whole 50k-step run)"
RUN_COST: tuple[PublishedRunCost, ...] = (
    PublishedRunCost(
        "standard",
        hours={"text": 4.30, "listops": 2.24, "retrieval": 8.33, "pathfinder": 2.57, "image": 4.22},
        peak_gb={"text": 10.37, "listops": 5.37, "retrieval": 10.77, "pathfinder": 5.74, "image": 11.47},
    ),
    PublishedRunCost(
        "nystrom",
        hours={"text": 0.71, "listops": 0.71, "retrieval": 1.29, "pathfinder": 1.49, "image": 2.70},
        peak_gb={"text": 1.21, "listops": 1.37, "retrieval": 2.39, "pathfinder": 3.35, "image": 6.71},
    ),
    PublishedRunCost(
        "skyformer",
        hours={"text": 1.02, "listops": 1.29, "retrieval": 1.86, "pathfinder": 2.03, "image": 3.40},
        peak_gb=None,
    ),
)


@dataclass(frozen=True)
class PublishedLayerCost:
    """Nyströmformer Table 1: one attention layer, per example, on a 1080Ti."""

    label: str
    seq_len: int
    memory_mb: float
    time_ms: float


LAYER_COST_PAPER = "Nyströmformer paper, Table 1 (one layer, per example, 1080Ti)"
LAYER_COST: tuple[PublishedLayerCost, ...] = (
    PublishedLayerCost("standard", 8192, 10233, 155.4),
    PublishedLayerCost("Nyströmformer-64", 8192, 450, 12.3),
    PublishedLayerCost("Linformer-256", 8192, 635, 11.3),
)
