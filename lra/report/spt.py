"""From scratch against self-pretrained (SPT), side by side: the report's section on ``pretrain=masked``.

- ``spt_table``: per task × model, the test accuracy from scratch and after SPT, the gain and the
  pretraining's masked-token accuracy.
- ``amos_table``: Amos et al. 2024's rows of a Transformer from scratch, after causal and after masked
  SPT, with our ``standard`` runs trained the same way beside them.

The gain is SPT minus scratch in accuracy points. When both sides ran the same seeds, two or more, it
is the mean ± sample std over seeds of each seed's difference (paired by seed); otherwise the difference
of the two means ± √(std_scratch² + std_SPT²), the spread of the difference of one run of each. The
cell says which: ``(3 paired)`` or ``(3 vs 2)``, the seeds from scratch and with SPT.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from lra.provenance import markdown_table
from lra.report.runs import GENERATED, Cell, Run, metric_cells
from lra.report.tables import comparable_runs, comparison_note
from lra.results.published_numbers import AMOS_SPT_ACCURACY, TASKS, PretrainingRow, PublishedPretraining

MASKED_ACC = "val/pretrain_acc"  # the pretraining's masked-token accuracy on the val split's inputs


def gain_cell(scratch: Sequence[Run], pretrained: Sequence[Run], metric: str = "test/acc") -> str:
    """The gain (points) of ``pretrained`` over ``scratch`` in ``metric`` (module docstring)."""
    before, after = ({run.seed: 100 * float(run.metrics[metric]) for run in side
                      if run.metrics.get(metric) is not None} for side in (scratch, pretrained))  # fmt: skip
    if not before or not after:
        return "—"
    if set(before) == set(after) and len(after) > 1 and None not in after:
        paired = Cell.of([after[seed] - before[seed] for seed in after])
        return f"{paired.mean:+.2f} ± {paired.std:.2f} ({paired.count} paired)"
    old, new = Cell.of(list(before.values())), Cell.of(list(after.values()))
    spread = f" ± {math.hypot(old.std, new.std):.2f}" if max(old.count, new.count) > 1 else ""
    return f"{new.mean - old.mean:+.2f}{spread} ({old.count} vs {new.count})"


def task_order(task: str) -> tuple[int, str]:
    return (TASKS.index(task) if task in TASKS else len(TASKS), task)


def spt_table(runs: Sequence[Run], metric: str = "test/acc") -> str:
    """One row per task × self-pretrained variant: its model, the pretraining (``SPT`` and its
    choices), the accuracy (%) from scratch and after SPT (mean ± std (seeds, how many at chance)),
    the gain and the masked-token accuracy (%) of the pretraining."""
    accuracy = metric_cells(runs, metric, scale=100.0)
    masked = metric_cells(runs, MASKED_ACC, scale=100.0)
    pairs = sorted({(run.task, run.scratch_variant, run.variant, run.spt) for run in runs if run.spt},
                   key=lambda pair: (task_order(pair[0]), pair[1], pair[3]))  # fmt: skip
    rows = []
    for task, scratch, variant, spt in pairs:
        before = [run for run in runs if run.task == task and run.variant == scratch]
        after = [run for run in runs if run.task == task and run.variant == variant]
        cells = [accuracy.get(v, {}).get(task) for v in (scratch, variant)]
        masked_cell = masked.get(variant, {}).get(task)
        rows.append(
            [task, scratch, spt, *(cell.format() if cell else "—" for cell in cells),
             gain_cell(before, after, metric), masked_cell.format() if masked_cell else "—"]
        )  # fmt: skip
    header = ["task", "attention", "pretraining", "from scratch", "self-pretrained", "gain (points)"]
    return markdown_table([*header, "masked-token acc."], rows)


UNTRANSCRIBED = "not transcribed"
OBJECTIVES = {None: "from scratch", "causal": "causal SPT", "masked": "masked SPT"}  # our runs' SPT is masked


def published_cell(ours: Cell | None, row: PretrainingRow, index: int) -> str:
    mine = ours.format() if ours else "—"
    if row.accuracy is None:
        return f"{mine} / {UNTRANSCRIBED}"
    paper = row.accuracy[index]
    return f"{mine} / {'chance' if paper is None else f'{paper:.2f}'}"


def average_cell(ours: dict[str, Cell], table: PublishedPretraining, row: PretrainingRow) -> str:
    """Ours: the mean over the paper's columns where all have runs / the paper's printed average."""
    complete = set(table.columns) <= set(ours)
    mine = f"{statistics.fmean(ours[task].mean for task in table.columns):.2f}" if complete else "—"
    return f"{mine} / {UNTRANSCRIBED if row.average is None else f'{row.average:.2f}'}"


def amos_table(
    runs: Sequence[Run], table: PublishedPretraining = AMOS_SPT_ACCURACY, metric: str = "test/acc"
) -> str:
    """Each published row of ``table`` (from scratch, causal SPT, masked SPT), with the variants of
    ``table.attention`` we ran the same way beside it (from scratch beside from scratch; ours, masked,
    beside masked SPT) among the runs ``comparable`` with its rows; each cell ``ours / the paper's``;
    the paper's row alone (``—`` for ours) where we have none; under it, ``comparison_note``."""
    runs, left = comparable_runs(
        [run for run in runs if run.attention == table.attention], table.size, table.preset
    )
    cells = metric_cells(runs, metric, scale=100.0)
    ours = {("masked" if run.spt else None, run.variant) for run in runs}
    rows = []
    for published in table.rows:
        variants = sorted(
            v for objective, v in ours if objective == published.objective and GENERATED not in v
        )
        for variant in variants or [None]:
            mine = cells.get(variant, {}) if variant else {}
            row = [published_cell(mine.get(task), published, i) for i, task in enumerate(table.columns)]
            label = f"{variant or table.attention}: {OBJECTIVES[published.objective]}"
            rows.append([label, *row, average_cell(mine, table, published), published.source])
    note = comparison_note(table.protocol, table.size, table.preset, left)
    return (
        markdown_table(["attention: trained", *table.columns, "AVG", "the paper's row"], rows) + "\n\n" + note
    )


def spt_section(runs: Sequence[Run]) -> list[str]:
    """The report's blocks on self-pretraining: empty when no completed run was self-pretrained."""
    if not any(run.spt for run in runs):
        return []
    table = AMOS_SPT_ACCURACY
    return [
        "## From scratch vs self-pretrained (SPT)",
        "Each row pairs the runs of one model that were self-pretrained (`pretrain=masked`: masked-token "
        "prediction on the task's own training inputs, then fine-tuning) with the same model trained from "
        "scratch (`pretrain=none`). Accuracies: mean ± sample std over seeds (seeds, how many at chance), "
        "%. Gain: SPT minus scratch in points; with the same seeds (two or more) on both sides, the mean ± "
        "std of each seed's difference (`paired`), else the difference of the means ± √(std² + std²) "
        "of the two sides (`n vs m` seeds). `share=` marks a compute-matched split of the steps. "
        "Masked-token acc.: the pretraining's masked-token accuracy on the val split's inputs. A row "
        f"marked `{GENERATED}` trained on a built-in generator's data, not the LRA release.",
        spt_table(runs),
        "### Beside the published numbers",
        f"{table.paper}: a Transformer from scratch (the LRA paper's), after causal (next-token) and after "
        "masked self-pretraining, each row with the table that prints it. Ours (`pretrain=masked`) sit "
        "beside the masked row, ours from scratch beside the scratch row. Each cell: ours / the paper's; "
        f"`{UNTRANSCRIBED}`: a figure this project does not carry (`lra/results/published_numbers.py`). "
        f"AVG: the "
        f"mean over these six columns, counting chance as {table.chance:g}% (as the paper does; ours only "
        "where all six have runs) / the paper's printed AVG.",
        amos_table(runs),
    ]
