"""The report's markdown document: header, provenance, our tables, scratch against self-pretrained, the
papers' sections, the jobs that did not complete and the W&B recipe, in order."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from lra.provenance import markdown_table
from lra.report import figures
from lra.report.configurations import common_options_line, usual_values_line
from lra.report.locality import locality_figure, locality_table
from lra.report.paper_layouts import PAPERS, FigureSpec, ReportInput
from lra.report.recall import RECALL_VS_STATE, apart
from lra.report.recall_tables import recall_blocks
from lra.report.runs import CHANCE_MARGIN, GENERATED, STAND_IN, Run, latest_and_superseded
from lra.report.spt import spt_section
from lra.report.tables import SIZE_RULE, accuracy_table, failed_section, parameter_table

ACCURACY_VS_TIME = FigureSpec(
    "lra_accuracy_vs_time",
    "## Test accuracy against training time",
    lambda report: figures.accuracy_vs_time(report.completed) if report.completed else None,
    "No completed run.",
)

LOCALITY = FigureSpec(
    "lra_locality",
    "## Accuracy against window: how long range is each task?",
    lambda report: locality_figure(report.completed),
    "No task has a completed `window` run.",
    lambda report: (
        "Test accuracy of the `window` core (each query sees the keys within ±w/2) against w, beside "
        "full attention (`standard`, its mean and 95% interval) and chance (the test split's majority "
        "class); `experiment=locality` sweeps it. A task's *locality length* is the smallest window whose "
        "mean is within 1 point of full attention, and the smallest whose mean reaches full attention's "
        "95% interval (two seeds of `standard` at least).\n\n" + locality_table(report.completed)
    ),
)

WANDB_SECTION = """\
Every run logs to W&B as `{task}-{attention}-s{seed}` (with the options its sweep varies), grouped by
task (`group = task`) and tagged with its task, attention and `budget=N`, with the resolved config (so
`attention.name` and every option are config fields).
Runs are offline by default: upload them first with `wandb sync outputs/*/*/wandb/offline-run-*` and
`wandb sync multirun/*/*/wandb/offline-run-*`. Then `python -m lra.report --wandb-workspace ENTITY/PROJECT`
saves this comparison as W&B workspace views of the project, one of all tasks and one per task: validation
accuracy against training time, test accuracy against step time and peak memory, bar charts of test
accuracy and peak memory, runs grouped by attention, the swept options and `pretrain.mode` (self-pretrained
runs apart from those trained from scratch, as the `SPT` rows) in the report's colours
(`pip install wandb-workspaces`, and a W&B login)."""


def provenance_lines(runs: Sequence[Run]) -> str:
    devices = sorted({r.device for r in runs if r.device})
    started = sorted(r.started for r in runs if r.started)
    finished = sorted(r.finished for r in runs if r.finished)
    span = f"{started[0]} to {finished[-1]}" if started and finished else "unknown"
    return f"- devices: {', '.join(devices) or 'unknown'}\n- runs started/finished: {span}"


def split_by_protocol(runs: Sequence[Run]) -> list[Run]:
    """``runs``, each variant labelled with its training protocol when the completed runs do not all
    share one, so that runs trained differently never share a row."""
    if len({run.protocol for run in runs if run.status == "completed"}) <= 1:
        return list(runs)
    return [
        replace(
            run,
            variant=f"{run.variant} [{run.protocol}]",
            scratch_variant=f"{run.scratch_variant} [{run.protocol}]",
        )
        for run in runs
    ]


def protocols_section(runs: Sequence[Run]) -> str:
    """The header line(s) naming the training protocol(s) of the completed runs."""
    counts = Counter(run.protocol for run in runs)
    if len(counts) <= 1:
        return f"- training protocol: {next(iter(counts), 'none')}"
    lines = ["- training protocols differ between these runs (each row names its own in brackets):"]
    return "\n".join(
        lines + [f"  - {protocol}: {count} run(s)" for protocol, count in sorted(counts.items())]
    )


def chance_lines(completed: Sequence[Run], metric: str = "test/acc") -> str:
    """Header lines: how many runs are at chance, and how many cannot be told (no majority share)."""
    flagged = [run for run in completed if run.at_chance(metric)]
    unknown = [run for run in completed if run.chance is None]
    lines = [
        f"- at chance (test accuracy at most the test split's majority-class share + "
        f"{100 * CHANCE_MARGIN:g} point): {len(flagged)} run(s)"
        + "".join(f"\n  - {run.task} {run.variant} seed {run.seed}" for run in flagged)
    ]
    if unknown:
        old = sum(run.schema == 1 for run in unknown)
        lines.append(
            f"- {len(unknown)} run(s) record no majority-class share ({old} with schema-1 summaries, "
            "written before it was recorded): no at-chance flag is possible for them"
        )
    return "\n".join(lines)


def counts_line(runs: Sequence[Run], completed: Sequence[Run], superseded: Sequence[tuple[Run, Run]]) -> str:
    """How many runs were read, counted, superseded and not completed, and the rows they fill."""
    cells = {(run.task, run.variant) for run in completed}
    rows = {run.variant for run in completed}
    return (
        f"{len(runs)} summary.json file(s): {len(completed)} completed run(s) counted, the latest of each "
        f"configuration × seed, in {len(rows)} row(s) ({len(cells)} configuration(s) × task); "
        f"{len(superseded)} superseded by a rerun of the same configuration and seed (listed at the end); "
        f"{sum(r.status != 'completed' for r in runs)} not completed (listed apart below)."
    )


def superseded_section(superseded: Sequence[tuple[Run, Run]]) -> str:
    """Each run a rerun replaced: its row, seed and folder, and the folder of the run that replaced it."""
    if not superseded:
        return "None."
    rows = [[old.task, old.variant, old.seed, f"`{old.path.parent}`", f"`{new.path.parent}`"]
            for old, new in superseded]  # fmt: skip
    return markdown_table(["task", "configuration", "seed", "run folder", "replaced by"], rows)


def figure_block(spec: FigureSpec, written: set[str], report: ReportInput) -> list[str]:
    """The figure's caption, its image (or why there is none) and its note."""
    image = f"![{spec.caption.lstrip('# ')}]({spec.stem}.png) ([SVG]({spec.stem}.svg))"
    return [spec.caption, image if spec.stem in written else spec.absent, spec.note(report)]


GENERATED_ONLY = (
    "Its tables set runs on the LRA release beside the paper's numbers; every run here trained on "
    f"generated data (`{GENERATED}`), so they are left out."
)


def paper_blocks(name: str, report: ReportInput, written: set[str]) -> list[str]:
    """A paper's heading, its tables (or why there are none: no run on the task's own data) and figures."""
    paper = PAPERS[name]
    on_real_data = any(GENERATED not in run.data for run in report.completed)
    blocks = [f"## {paper.title}", *(paper.tables(report) if on_real_data else [GENERATED_ONLY])]
    for spec in paper.figures:
        blocks += figure_block(spec, written, report)
    return blocks


NO_LRA = "No LRA task among these runs: the recall diagnostics are below."


def lra_blocks(
    lra: Sequence[Run], final: bool, papers: Sequence[str], report: ReportInput, written: set[str]
) -> list[str]:
    """The LRA runs' accuracy and size tables (and at the final weights with ``final``), scratch against
    self-pretrained, the papers' sections and the accuracy-against-time and locality figures."""
    final_blocks = [
        "## Test accuracy at the final weights (%)",
        "As above, from `test/acc_final` (one more test pass on the weights at the end of training; "
        "runs whose summary.json predates it have none).",
        accuracy_table(lra, "test/acc_final")
        if any("test/acc_final" in run.metrics for run in lra)
        else "No run records it.",
    ]
    return [
        "## Test accuracy (%)",
        "Mean ± sample std over seeds [the 95% confidence interval of the mean, Student's t, from two "
        "seeds on] (number of seeds, and how many of them are at chance) of the test "
        "accuracy at the selected checkpoint (`test/acc`); the average is the mean of the five task "
        "means and is given only where all five tasks have runs. A row marked "
        f"`{GENERATED}` trained on a built-in generator's data (ListOps, Pathfinder) instead of "
        "the LRA release: a different task, not comparable with the published numbers, never "
        "averaged as an LRA score and left out of the papers' tables below; one also marked "
        f"`{STAND_IN}` trained on random tokens and labels (`debug=fdr` without the task's data). "
        "A row marked `SPT` was "
        "self-pretrained on its task's inputs before fine-tuning (`pretrain=masked`).",
        accuracy_table(lra),
        "## Model size (parameters)",
        "Parameters of each model (`model/params`), with the share of its attention (`model/mixer_params`: "
        "the encoder blocks' attention projections and core). ⚑ marks a model more than "
        f"{SIZE_RULE:.0%} larger than the `standard` Transformer of the same task, data and protocol: "
        "the LRA paper compares models of about the same size only.",
        parameter_table(lra),
        *(final_blocks if final else []),
        *spt_section(lra),
        *(block for name in papers for block in paper_blocks(name, report, written)),
        *figure_block(ACCURACY_VS_TIME, written, report),
        *(figure_block(LOCALITY, written, report) if locality_table(lra) else []),
    ]


def build_report(
    runs: Sequence[Run],
    command: str,
    papers: Sequence[str] = tuple(PAPERS),
    final: bool = False,
    written: set[str] | None = None,
    report: ReportInput | None = None,
    chosen: str = "",
) -> str:
    """The markdown report of ``runs`` (already passed through ``split_by_protocol``): the header, our
    accuracy table (and at the final weights with ``final``), scratch against self-pretrained (when
    a run was self-pretrained), each of ``papers``' sections, the accuracy-against-time figure, the
    locality figure (when a task has ``window`` runs), the jobs that did not complete and the W&B
    recipe. ``written``: the figure stems the caller saved; ``report``: the papers' input (built from
    ``runs`` when None); ``chosen``: how the runs were chosen, for the header."""
    completed, superseded = latest_and_superseded(runs)
    lra, recall = apart(completed)  # the recall runs have their own sections
    report = report or ReportInput(lra, [], [], recall=recall)
    written = written or set()
    blocks = [
        "# LRA results",
        f"Produced by `{command}` from {counts_line(runs, completed, superseded)}",
        provenance_lines(runs) + (f"\n- runs chosen: {chosen}" if chosen else ""),
        "\n".join(line for line in (common_options_line(completed), usual_values_line(completed)) if line),
        protocols_section(completed),
        chance_lines(completed),
        *(lra_blocks(lra, final, papers, report, written) if lra else [NO_LRA]),
        *(figure_block(RECALL_VS_STATE, written, report) if report.recall else []),
        *recall_blocks(report),
        "## Failed, NaN and interrupted jobs",
        failed_section(runs),
        "## Runs superseded by a rerun",
        "A rerun of a configuration and seed replaces the earlier run in every table and figure above.",
        superseded_section(superseded),
        "## The same comparison in W&B",
        WANDB_SECTION,
    ]
    return "\n\n".join(block for block in blocks if block) + "\n"
