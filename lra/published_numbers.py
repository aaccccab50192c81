"""Numbers published by the LRA, Nyströmformer, Skyformer and self-pretraining papers, put beside ours by
the report and the benchmarks. Rows are keyed by our registry names.

- LRA paper: Tay et al. 2020, "Long Range Arena: A Benchmark for Efficient Transformers", Table 1.
- Nyströmformer paper: Xiong et al. 2021, "Nyströmformer: A Nyström-Based Algorithm for Approximating
  Self-Attention", Table 1 (one layer's memory and time) and Table 3 (LRA accuracy).
- Skyformer paper: Chen et al. 2021, "Skyformer: Remodel Self-Attention with Gaussian Kernel and Nyström
  Method", Table 1 (LRA accuracy) and Table 2 (time and memory of a whole run).
- Self-pretraining paper: Amos, Berant and Gupta 2024, "Never Train from Scratch: Fair Comparison of
  Long-Sequence Models Requires Data-Driven Priors" (ICLR 2024), Table 1: a Transformer from scratch,
  after causal self-pretraining (as quoted by Parnichkun et al. 2024, Table 1) and after masked
  self-pretraining (its row is carried without figures: none is transcribed here).
- State-space models and Mega (``SSM_ACCURACY``): S4 (Gu et al., ICLR 2022), S4D-LegS (Gu et al.,
  NeurIPS 2022), S5 (Smith et al., ICLR 2023) and Mega (Ma et al., ICLR 2023), their LRA rows with
  Path-X: other models at other sizes, shown beside ours.

Each table states the protocol its rows trained under, and the model size where one size serves every
task: the report sets our runs beside a row only when they trained under the matching preset or at
that size (``comparable``).

Accuracies are percentages in the task order of ``TASKS``; the Skyformer paper orders its columns
Text, ListOps, Retrieval, Pathfinder, Image (``SKYFORMER_TASK_ORDER``): its Table 2 is written below in
that printed order and re-keyed by task, its Table 1 re-ordered to ``TASKS``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TASKS = ("listops", "text", "retrieval", "image", "pathfinder")
SKYFORMER_TASK_ORDER = ("text", "listops", "retrieval", "pathfinder", "image")


@dataclass(frozen=True)
class PublishedAccuracy:
    """One paper's LRA accuracy table. ``rows``: attention -> accuracy (%) per task of ``TASKS``;
    ``averages``: attention -> the average as printed in the paper's AVG column; ``columns``: the tasks
    in the order the paper prints them; ``protocol``: how its rows trained, in words; ``size``: the
    (layers, width) of every row's model, None where it differs per task; ``preset``: our
    ``experiment=`` that trains as the rows did. Ours sit beside the rows only when trained under that
    preset or at that size (``comparable``)."""

    paper: str
    rows: dict[str, tuple[float, float, float, float, float]]
    averages: dict[str, float]
    columns: tuple[str, ...] = TASKS
    protocol: str = ""
    size: tuple[int, int] | None = None
    preset: str | None = None

    def accuracy(self, attention: str, task: str) -> float:
        return self.rows[attention][TASKS.index(task)]


def comparable(size: tuple[int, int] | None, preset: str | None, run_size: tuple[int, int],
               run_preset: str | None) -> bool:  # fmt: skip
    """Whether a run of ``run_size`` (layers, width) trained under ``run_preset`` compares with rows of
    ``size`` trained as ``preset`` does: the same preset, or one size for every task and the same."""
    return (preset is not None and run_preset == preset) or (size is not None and run_size == size)


LRA_ACCURACY = PublishedAccuracy(
    paper="LRA paper (Tay et al. 2020), JAX",
    rows={
        "standard": (36.37, 64.27, 57.46, 42.44, 71.40),
        "linformer": (35.70, 53.94, 52.27, 38.56, 76.34),
        "reformer": (37.27, 56.10, 53.40, 38.07, 68.50),
        "performer": (18.01, 65.40, 53.82, 42.77, 77.05),
    },
    averages={"standard": 54.39, "linformer": 51.36, "reformer": 50.67, "performer": 51.41},
    protocol="LRA protocol: a model per task, 1 to 4 layers, 32 to 512 wide",
    preset="lra",
)
NYSTROMFORMER_ACCURACY = PublishedAccuracy(
    paper="Nyströmformer paper (Xiong et al. 2021), Table 3, PyTorch",
    rows={
        "standard": (37.10, 65.02, 79.35, 38.20, 74.16),
        "reformer": (19.05, 64.88, 78.64, 43.29, 69.36),
        "linformer": (37.25, 55.91, 79.37, 37.84, 67.60),
        "performer": (18.80, 63.81, 78.62, 37.07, 69.87),
        "nystrom": (37.15, 65.52, 79.56, 41.58, 70.94),
    },
    averages={"standard": 58.77, "reformer": 55.04, "linformer": 55.59, "performer": 53.63, "nystrom": 58.95},
    protocol="Nyströmformer protocol, 2 × 64 (2 layers, 64 wide)",
    size=(2, 64),
    preset="nystromformer",
)
SKYFORMER_ACCURACY = PublishedAccuracy(
    paper="Skyformer paper (Chen et al. 2021), Table 1, 3 seeds",
    rows={
        "standard": (38.37, 61.95, 80.69, 40.57, 65.26),
        "kernelized": (38.78, 60.22, 81.77, 41.29, 70.73),
        "nystrom": (38.51, 64.83, 80.52, 41.30, 69.48),
        "linformer": (37.45, 58.93, 78.19, 37.96, 60.93),
        "informer": (32.53, 62.64, 77.57, 38.10, 57.83),
        "performer": (38.02, 64.19, 80.04, 41.43, 66.30),
        "reformer": (37.68, 62.93, 78.99, 48.87, 66.49),
        "bigbird": (39.25, 63.86, 80.28, 43.16, 68.72),
        "skyformer": (38.69, 64.70, 82.06, 40.77, 70.73),
    },
    averages={
        "standard": 57.37,
        "kernelized": 58.56,
        "nystrom": 58.93,
        "linformer": 54.69,
        "informer": 53.73,
        "performer": 58.00,
        "reformer": 58.99,
        "bigbird": 59.05,
        "skyformer": 59.39,
    },
    columns=SKYFORMER_TASK_ORDER,
    protocol="Skyformer protocol, 2 × 64 (2 layers, 64 wide)",
    size=(2, 64),
    preset="skyformer",
)
ACCURACY: tuple[PublishedAccuracy, ...] = (LRA_ACCURACY, NYSTROMFORMER_ACCURACY, SKYFORMER_ACCURACY)


# Self-pretraining (Amos et al. 2024): one row per objective, each with the table that prints it.


@dataclass(frozen=True)
class PretrainingRow:
    """A published row of one model: ``objective`` None from scratch, else how it was self-pretrained
    (``masked``, ``causal``); ``source``: where it is printed; ``accuracy`` (%) per column, None where
    the paper prints "chance"; ``accuracy`` None altogether where the row's figures are not transcribed
    here; ``average``: as printed."""

    objective: str | None
    source: str
    accuracy: tuple[float | None, ...] | None
    average: float | None


@dataclass(frozen=True)
class PublishedPretraining:
    """One model from scratch and self-pretrained (``rows``) per task of ``columns``; "chance" counts as
    ``chance`` (%) in the printed averages; ``protocol``, ``size`` and ``preset`` as in
    ``PublishedAccuracy``."""

    paper: str
    attention: str  # our registry name of the paper's model
    columns: tuple[str, ...]
    rows: tuple[PretrainingRow, ...]
    protocol: str
    size: tuple[int, int] | None = None
    preset: str | None = None
    chance: float = 50.0

    def row(self, objective: str | None) -> PretrainingRow:
        return next(row for row in self.rows if row.objective == objective)


PARNICHKUN = "as quoted by Parnichkun et al. 2024, Table 1"
AMOS_SPT_ACCURACY = PublishedPretraining(
    paper='Amos et al. 2024, "Never Train from Scratch"',
    attention="standard",
    columns=(*TASKS, "pathx"),
    rows=(
        PretrainingRow(
            None,
            f"Amos et al. 2024, Table 1 (the LRA paper's Transformer), {PARNICHKUN}",
            (36.37, 64.27, 57.46, 42.44, 71.40, None),
            53.66,
        ),
        PretrainingRow(
            "causal",
            f"Amos et al. 2024, Table 1, causal SPT, {PARNICHKUN}",
            (59.15, 88.81, 90.38, 76.0, 88.49, 88.05),
            81.81,
        ),
        PretrainingRow(
            "masked",
            "Amos et al. 2024, Table 1, masked SPT (figures not transcribed here; §3.1: "
            "similar to causal SPT)",
            None,
            None,
        ),
    ),  # fmt: skip
    protocol="a Transformer of the LRA paper's sizes, self-pretrained on each task's inputs",
    preset="amos",
)


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


def layer_cost_baseline(seq_len: int) -> PublishedLayerCost:
    """The Transformer cell at ``seq_len``, the paper's reference for its ×-factors."""
    return next(c for c in LAYER_COST if c.attention == "standard" and c.seq_len == seq_len)


# ---- State-space models and Mega: other models at other sizes -------------------------------------
# Their authors' LRA rows (their own depth, width and training), shown beside our runs of the shared
# encoder as other models, never as the same model. Six tasks: the five of ``TASKS`` and Path-X; each
# average is the paper's, over the six. Each figure was read in the stored sources named on its row,
# not in the papers themselves; a cell that could not be read there stays None.

SSM_COLUMNS = (*TASKS, "pathx")


@dataclass(frozen=True)
class PublishedModel:
    """One published LRA row of a model that is not the shared encoder: accuracy (%) per task of
    ``columns`` (None: not verified here) and the average over the six as printed."""

    model: str
    paper: str
    accuracies: tuple[float | None, ...]
    average: float
    columns: tuple[str, ...] = SSM_COLUMNS

    def accuracy(self, task: str) -> float | None:
        return self.accuracies[self.columns.index(task)]


SSM_ACCURACY: tuple[PublishedModel, ...] = (
    # Read in a course page quoting "S4 Table 4" (arXiv 2111.00396) and in several papers' LRA tables
    # quoting S4 (FRACTAL, RWKV-4, suGRU notes); all six and the average agree.
    PublishedModel(
        "S4",
        "Gu, Goel and Ré, ICLR 2022, Table 4",
        (59.60, 86.82, 90.90, 88.65, 94.20, 96.35),
        86.09,
    ),
    # Read in the LRA tables of FRACTAL and WaLRUS notes (labelled "S4D", to two decimals) and of the
    # LRU paper, Table 3 ("S4D-LegS (paper results)", to one decimal, the same figures rounded; its
    # image column is sCIFAR, so the LRA Image cell is read in the first two only). The table's
    # number in the S4D paper was not verified.
    PublishedModel(
        "S4D-LegS",
        "Gu, Gupta, Goel and Ré, NeurIPS 2022, its LRA table",
        (60.47, 86.18, 89.46, 88.19, 93.06, 91.95),
        84.89,
    ),
    # Read in a course page quoting "S5 Table 1" (arXiv 2208.04933) and in WaLRUS notes; the LRU paper's
    # "S5 (paper results)" agree to one decimal.
    PublishedModel(
        "S5",
        "Smith, Warrington and Linderman, ICLR 2023, Table 1",
        (62.15, 89.31, 91.40, 88.00, 95.33, 98.58),
        87.46,
    ),
    # Read in a course page quoting "Mega Table 2" (arXiv 2209.10655) and in ChordMixer's README.
    PublishedModel(
        "Mega",
        "Ma et al., ICLR 2023, Table 2",
        (63.14, 90.43, 91.25, 90.44, 96.01, 97.98),
        88.21,
    ),
)
