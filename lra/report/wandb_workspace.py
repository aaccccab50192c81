"""Saved W&B workspace views of a project's runs: ``python -m lra.report --wandb-workspace ENTITY/PROJECT``.

Unlike ``lra.report.wandb_log``, which uploads the report's own tables and figures into one W&B run,
this lays out panels that W&B draws live from the metrics every training run logged: one view of all
tasks (runs grouped by task, attention, the swept options and, for self-pretrained runs,
``pretrain.mode``) and one view per task (the same without task). Each holds validation accuracy
against training time (Skyformer Figure 2; a line per group, the mean over seeds), test accuracy
against step time with peak memory on the z axis (LRA Figure 3; W&B's scatter panel has no marker
size), bar charts of test accuracy and peak memory, and the runs table with the swept options as
columns, each group in the report's colour of its attention (``lra.results.plotting.attention_color``).
``build_workspaces`` makes the views from the runs ``lra.report.runs`` finds, offline;
``save_workspaces`` saves them, which needs a W&B login.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from lra.config.errors import ConfigError
from lra.config.extras import DASHBOARDS, require
from lra.report.runs import Run
from lra.results.plotting import attention_color

VIEW_PREFIX = "LRA"
TASK_KEY, ATTENTION_KEY, SEED_KEY = "task.name", "attention.name", "seed"
SPT_KEY = "pretrain.mode"  # how a run was self-pretrained (lra.report.runs: the SPT rows)
MEMORY_METRICS = ("perf/peak_gpu_mem_mb", "perf/peak_rss_mb")  # on a GPU, on a CPU
SUMMARY_COLUMNS = (
    "test/acc",
    "val/acc_best",
    "perf/step_ms",
    "perf/train_time_s",
    "model/params",
    "model/mixer_params",
)
MIN_RUNS_SHOWN = 10  # W&B's default number of runs (or groups) a panel draws


class WorkspaceError(RuntimeError):
    """The workspace cannot be built or saved; the message says why and what to do, in one line."""


def api() -> tuple[ModuleType, ModuleType]:
    """``(wandb_workspaces.workspaces, wandb_workspaces.reports.v2)``; ``WorkspaceError`` naming the
    install command when the package is missing."""
    try:
        require(DASHBOARDS, "--wandb-workspace")
    except ConfigError as error:
        raise WorkspaceError(str(error)) from None
    import wandb_workspaces.reports.v2 as reports
    import wandb_workspaces.workspaces as workspaces

    return workspaces, reports


def parse_target(target: str) -> tuple[str, str]:
    """``(entity, project)`` of ``ENTITY/PROJECT``."""
    entity, _, project = target.partition("/")
    if not entity or not project or "/" in project:
        raise WorkspaceError(f"--wandb-workspace takes ENTITY/PROJECT (e.g. my-team/lra), got {target!r}")
    return entity, project


def project_runs(runs: Sequence[Run], project: str) -> list[Run]:
    """The readable runs that logged to W&B project ``project``; ``WorkspaceError`` if there are none."""
    readable = [run for run in runs if run.status != "unreadable"]
    chosen = [run for run in readable if run.wandb_project == project]
    if not chosen:
        found = sorted({run.wandb_project for run in readable if run.wandb_project})
        raise WorkspaceError(
            f"none of the {len(readable)} runs found logged to W&B project {project!r} "
            f"(their projects: {', '.join(found) or 'none, W&B was off'})"
        )
    return chosen


def config_value(config: dict, key: str) -> Any:
    """The value at the dotted ``key`` of a resolved config, or None."""
    value: Any = config
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def swept_config_keys(runs: Sequence[Run]) -> list[str]:
    """The config keys the report's labels name (``Run.label_keys``: non-default attention options and
    what differs between configurations), then those the runs' sweeps varied (summary.json
    ``options``), in the order first seen; a swept config group (``experiment=a,b``) is left out:
    W&B's run config does not hold its name."""
    named = [key for run in runs for key in run.label_keys]
    keys = dict.fromkeys([*named, *(key for run in runs for key in run.options)])
    return [key for key in keys if any(scalar(config_value(run.config, key)) for run in runs)]


def scalar(value: Any) -> bool:
    return value is not None and not isinstance(value, dict | list)


def memory_metric(runs: Sequence[Run]) -> str:
    """The peak-memory metric most of ``runs`` report (GPU on a tie)."""
    counts = Counter(metric for run in runs for metric in MEMORY_METRICS if metric in run.metrics)
    return max(MEMORY_METRICS, key=lambda metric: (counts[metric], metric == MEMORY_METRICS[0]))


def group_value(value: Any) -> str:
    """A config value as W&B names its group: strings as they are, other values as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def group_colors(runs: Sequence[Run], levels: Sequence[str], workspaces: ModuleType) -> dict[object, str]:
    """The report's colour of each group's attention, for every group path at or below the attention
    level of ``levels`` (the runset's grouping keys) that the runs fill."""
    depth = levels.index(ATTENTION_KEY) + 1
    colors: dict[object, str] = {}
    for run in runs:
        path = [group_value(config_value(run.config, key)) for key in levels]
        for end in range(depth, len(levels) + 1):
            key = path[0] if end == 1 else workspaces.GroupPath(*path[:end])
            colors.setdefault(key, attention_color(run.attention))
    return colors


def config_column(key: str) -> str:
    """The runs-table column of config ``key``: W&B stores a nested config under ``value`` after its
    top-level key (``attention.num_landmarks`` -> ``config:attention.value.num_landmarks``)."""
    head, _, rest = key.partition(".")
    return f"config:{head}.value{'.' + rest if rest else ''}"


def panels(memory: str, reports: ModuleType) -> list:
    """Skyformer Figure 2, LRA Figure 3 and the bar charts of test accuracy and peak memory."""
    spread = {"groupby_aggfunc": "mean", "groupby_rangefunc": "stddev"}
    return [
        reports.LinePlot(
            title="Validation accuracy against training time (Skyformer Figure 2)",
            x="perf/elapsed_s", y=["val/acc"], title_x="training time (s)", title_y="val/acc", **spread,
        ),
        reports.ScatterPlot(
            title=f"Test accuracy against step time, {memory} on z (LRA Figure 3)",
            x="perf/step_ms", y="test/acc", z=memory,
        ),
        reports.BarPlot(title="Test accuracy", metrics=["test/acc"], **spread),
        reports.BarPlot(title="Peak memory (MB)", metrics=[memory], **spread),
    ]  # fmt: skip


def build_view(runs: Sequence[Run], entity: str, project: str, task: str | None = None):
    """The view of ``task``'s runs (filtered to it in W&B), or of all of ``runs``' tasks when None."""
    workspaces, reports = api()
    shown = [run for run in runs if task in (None, run.task)]
    tasks = list(dict.fromkeys(run.task for run in shown))
    # self-pretrained runs never share a group with runs trained from scratch, as in the report's rows
    swept = [*swept_config_keys(shown), *([SPT_KEY] if any(run.spt for run in shown) else [])]
    levels = [*([TASK_KEY] if task is None else []), ATTENTION_KEY, *swept]
    memory = memory_metric(shown)
    task_filter = workspaces.Config(TASK_KEY)
    return workspaces.Workspace(
        entity=entity,
        project=project,
        name=f"{VIEW_PREFIX}: {task or 'all tasks'}",
        sections=[
            workspaces.Section(
                name=f"{task or 'All tasks'}: accuracy, time and memory",
                panels=panels(memory, reports),
                is_open=True,
                layout_settings=workspaces.SectionLayoutSettings(columns=2, rows=2),
            )
        ],
        settings=workspaces.WorkspaceSettings(max_runs=max(MIN_RUNS_SHOWN, len(shown))),
        runset_settings=workspaces.RunsetSettings(
            filters=[task_filter == task if task else task_filter.isin(tasks)],
            groupby=[workspaces.Config(key) for key in levels],
            group_colors=group_colors(shown, levels, workspaces),
            pinned_columns=[
                *(config_column(key) for key in (TASK_KEY, ATTENTION_KEY, *swept, SEED_KEY)),
                *(f"summary:{metric}" for metric in (*SUMMARY_COLUMNS, memory)),
            ],
        ),
    )


def build_workspaces(runs: Sequence[Run], entity: str, project: str) -> list:
    """The views of ``runs`` that logged to ``project``: all tasks, then one per task."""
    chosen = project_runs(runs, project)
    tasks = list(dict.fromkeys(run.task for run in chosen))
    return [
        build_view(chosen, entity, project),
        *(build_view(chosen, entity, project, task) for task in tasks),
    ]


def save_workspaces(views: Sequence) -> list[str]:
    """Save ``views`` to W&B (each as a new saved view of its project); their URLs. ``WorkspaceError``
    in one line when W&B refuses: no login, no network, no access to the project."""
    import wandb

    try:
        return [view.save().url for view in views]
    except wandb.errors.UsageError as error:
        raise WorkspaceError(f"cannot save the W&B workspace: {error}") from None
    except Exception as error:  # the transport's errors vary by W&B version: requests', W&B's own
        raise WorkspaceError(f"cannot save the W&B workspace: {type(error).__name__}: {error}") from None


def write_workspaces(runs: Sequence[Run], target: str) -> str:
    """Build and save the views of ``runs`` in ``ENTITY/PROJECT``; one line saying where they are."""
    entity, project = parse_target(target)
    urls = save_workspaces(build_workspaces(runs, entity, project))
    return f"saved {len(urls)} W&B workspace view(s) in {target}: {' '.join(urls)}"
