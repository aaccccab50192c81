"""Accuracies published by the LRA, Nyströmformer, Skyformer and self-pretraining papers and the state-space
models' papers, put beside ours by the report. Rows are keyed by our registry names. The papers' time and
memory figures are in ``lra.results.published_costs``.

- LRA paper: Tay et al. 2020, "Long Range Arena: A Benchmark for Efficient Transformers", Table 1.
- Nyströmformer paper: Xiong et al. 2021, "Nyströmformer: A Nyström-Based Algorithm for Approximating
  Self-Attention", Table 3 (LRA accuracy).
- Skyformer paper: Chen et al. 2021, "Skyformer: Remodel Self-Attention with Gaussian Kernel and Nyström
  Method", Table 1 (LRA accuracy).
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
Text, ListOps, Retrieval, Pathfinder, Image (``SKYFORMER_TASK_ORDER``): its Table 1 is re-ordered to
``TASKS`` here.
"""

from __future__ import annotations

from dataclasses import dataclass

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
