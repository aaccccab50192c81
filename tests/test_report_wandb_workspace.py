"""``python -m lra.report --wandb-workspace ENTITY/PROJECT``: the W&B views built from a small sweep's runs
(panels, queries, grouping, colours, columns) as W&B receives them, and saving without a login."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
from conftest import tiny_data_overrides
from helpers.report_summaries import masked_pretrain, write_summary
from test_resume import lra
from wandb_workspaces.workspaces._run_color_groups import parse_run_color_group_key

from lra.report.runs import Run, find_runs
from lra.report.wandb_workspace import WorkspaceError, build_workspaces, save_workspaces, write_workspaces
from lra.results.plotting import attention_color

TASKS, ATTENTIONS, LANDMARKS, SEEDS = ("listops", "text"), ("nystrom", "skyformer"), (32, 64), (0, 1)


def sweep_config(task: str, attention: str, landmarks: int, seed: int, project: str = "lra") -> dict:
    """The resolved config's keys that a W&B run of ``python -m lra -m`` holds and the views use."""
    return {
        "task": {"name": task, "lr": 1e-4},
        "attention": {"name": attention, "num_landmarks": landmarks},
        "seed": seed,
        "logger": {"wandb": {"project": project}},
    }


@pytest.fixture
def sweep(tmp_path: Path) -> list[Run]:
    """``task=listops,text attention=nystrom,skyformer attention.num_landmarks=32,64 seed=0,1
    experiment=a,b`` as summary.json files (the swept config group ``experiment`` has no config key),
    plus a run of another W&B project and an unreadable file."""
    for number, (task, attention, landmarks, seed) in enumerate(
        (t, a, n, s) for t in TASKS for a in ATTENTIONS for n in LANDMARKS for s in SEEDS
    ):
        write_summary(
            tmp_path, task, attention, seed, 0.5, finished=f"2025-01-01T10:00:{number:02d}",
            config=sweep_config(task, attention, landmarks, seed),
            metrics={"perf/step_ms": 10.0 * landmarks, "val/acc_best": 0.5},
            options={"attention.num_landmarks": str(landmarks), "experiment": "a"},
        )  # fmt: skip
    write_summary(
        tmp_path, "image", "standard", 0, 0.4, config=sweep_config("image", "standard", 0, 0, "other")
    )
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "summary.json").write_text("{")
    return find_runs([tmp_path])


def spec(view) -> dict:
    """What W&B receives for ``view``: its spec as the upsert request sends it."""
    return view._to_model().spec.model_dump(by_alias=True, exclude_none=True)["section"]


def as_logged(config: dict) -> dict:
    """A nested config as W&B stores a run's config: each top-level key's value under ``value``."""
    return {key: {"value": value} for key, value in config.items()}


def lookup(stored: dict, dotted: str):
    value = stored
    for part in dotted.split("."):
        value = value[part]
    return value


def filter_keeps(filters: dict, run: Run) -> bool:
    """Whether the runset's filterV2 keeps ``run`` (config keys: ``top.value.rest``, as grouping)."""
    (leaf,) = filters["filters"]
    head, _, rest = leaf["key"]["name"].partition(".")
    value = lookup(as_logged(run.config), f"{head}.value{'.' + rest if rest else ''}")
    return value in leaf["value"] if leaf["op"] == "IN" else value == leaf["value"]


def test_an_overview_then_a_view_per_task_each_with_the_papers_panels(sweep):
    views = build_workspaces(sweep, "me", "lra")
    assert [view.name for view in views] == ["LRA: all tasks", "LRA: listops", "LRA: text"]
    assert {(view.entity, view.project) for view in views} == {("me", "lra")}
    for view in views:
        (section,) = spec(view)["panelBankConfig"]["sections"]
        line, scatter, accuracy, memory = section["panels"]
        assert line["viewType"] == "Run History Line Plot"
        assert (line["config"]["xAxis"], line["config"]["metrics"]) == ("perf/elapsed_s", ["val/acc"])
        assert (line["config"]["groupAgg"], line["config"]["groupArea"]) == ("mean", "stddev")
        assert scatter["viewType"] == "Scatter Plot"
        assert {axis: scatter["config"][f"{axis}Axis"] for axis in "xyz"} == {
            "x": "summary:perf/step_ms",
            "y": "summary:test/acc",
            "z": "summary:perf/peak_rss_mb",  # CPU runs: their peak resident memory
        }
        assert [(bar["viewType"], bar["config"]["metrics"]) for bar in (accuracy, memory)] == [
            ("Bar Chart", ["test/acc"]),
            ("Bar Chart", ["perf/peak_rss_mb"]),
        ]
        shown = 16 if view.name == "LRA: all tasks" else 8
        assert spec(view)["settings"]["maxRuns"] >= shown  # every run of the view is drawn


def test_queries_and_grouping_select_and_split_the_sweeps_runs(sweep):
    lra_runs = [run for run in sweep if run.wandb_project == "lra"]
    for view in build_workspaces(sweep, "me", "lra"):
        (runset,) = spec(view)["runSets"]
        task = view.name.removeprefix("LRA: ")
        kept = [run for run in lra_runs if filter_keeps(runset["filters"], run)]
        assert kept == [run for run in lra_runs if task in ("all tasks", run.task)]
        keys = [key["name"] for key in runset["grouping"]]
        overview = ["task.value.name"] if task == "all tasks" else []
        assert keys == [*overview, "attention.value.name", "attention.value.num_landmarks"]
        groups = {tuple(str(lookup(as_logged(run.config), key)) for key in keys) for run in kept}
        rows = [
            (t, a, str(n)) for t in TASKS for a in ATTENTIONS for n in LANDMARKS if task in ("all tasks", t)
        ]
        assert groups == {row if overview else row[1:] for row in rows}


def test_groups_take_the_reports_colour_of_their_attention(sweep):
    for view in build_workspaces(sweep, "me", "lra"):
        section = spec(view)
        (runset,) = section["runSets"]
        colored = {}
        for key, color in section["customRunColors"].items():
            parsed = parse_run_color_group_key(key)
            assert parsed["runset_id"] == runset["id"]
            colored[tuple(entry["value"] for entry in parsed["path"])] = color
        depth = len(runset["grouping"])
        leaves = {path: color for path, color in colored.items() if len(path) == depth}
        # each group of the sweep: (task,) attention, landmarks
        assert len(leaves) == (8 if depth == 3 else 4)
        for path, color in colored.items():
            attention = path[depth - 2]  # the level above num_landmarks
            assert color == attention_color(attention)
        assert {path[:-1] for path in leaves} <= set(colored)  # the attention level is coloured too


def test_the_swept_options_and_the_figures_metrics_are_columns(sweep):
    for view in build_workspaces(sweep, "me", "lra"):
        assert view.runset_settings.pinned_columns == [
            "run:displayName",
            "config:task.value.name",
            "config:attention.value.name",
            "config:attention.value.num_landmarks",  # swept; experiment=a,b is a config group, not a key
            "config:seed.value",
            "summary:test/acc",
            "summary:val/acc_best",
            "summary:perf/step_ms",
            "summary:perf/train_time_s",
            "summary:model/params",
            "summary:model/mixer_params",
            "summary:perf/peak_rss_mb",
        ]


def test_gpu_runs_plot_their_gpu_memory(tmp_path):
    config = sweep_config("listops", "nystrom", 32, 0)
    write_summary(
        tmp_path, "listops", "nystrom", 0, 0.5, config=config, metrics={"perf/peak_gpu_mem_mb": 900.0}
    )
    (overview, _) = build_workspaces(find_runs([tmp_path]), "me", "lra")
    panels = spec(overview)["panelBankConfig"]["sections"][0]["panels"]
    assert panels[1]["config"]["zAxis"] == "summary:perf/peak_gpu_mem_mb"
    assert panels[3]["config"]["metrics"] == ["perf/peak_gpu_mem_mb"]
    assert [key["name"] for key in spec(overview)["runSets"][0]["grouping"]] == [
        "task.value.name",
        "attention.value.name",
        "attention.value.num_landmarks",
    ]  # no sweep: grouped by task, attention and the option its label names (num_landmarks=32)


def test_self_pretrained_runs_get_groups_of_their_own(tmp_path):
    config = sweep_config("listops", "nystrom", 32, 0)
    write_summary(tmp_path, "listops", "nystrom", 0, 0.5, config=config)
    write_summary(tmp_path, "listops", "nystrom", 0, 0.6, config=config, pretrain=masked_pretrain())
    for view in build_workspaces(find_runs([tmp_path]), "me", "lra"):
        (runset,) = spec(view)["runSets"]
        assert [key["name"] for key in runset["grouping"]][-3:] == [
            "attention.value.name",
            "attention.value.num_landmarks",  # the option the report's label names, as in its rows
            "pretrain.value.mode",
        ]
        paths = [parse_run_color_group_key(key)["path"] for key in spec(view)["customRunColors"]]
        leaves = {
            tuple(entry["value"] for entry in path[-3:] if entry["value"] != "32")
            for path in paths
            if len(path) == len(runset["grouping"])
        }
        assert leaves == {("nystrom", "masked"), ("nystrom", "null")}  # from scratch: no pretrain.mode
        assert "config:pretrain.value.mode" in view.runset_settings.pinned_columns


def test_bad_targets_and_projects_without_runs_are_one_line_errors(sweep, monkeypatch):
    with pytest.raises(WorkspaceError, match=r"takes ENTITY/PROJECT \(e\.g\. my-team/lra\), got 'lra'$"):
        write_workspaces(sweep, "lra")
    with pytest.raises(WorkspaceError) as error:
        build_workspaces(sweep, "me", "nope")
    assert (
        str(error.value)
        == "none of the 17 runs found logged to W&B project 'nope' (their projects: lra, other)"
    )
    monkeypatch.setitem(sys.modules, "wandb_workspaces", None)
    with pytest.raises(WorkspaceError) as error:
        build_workspaces(sweep, "me", "lra")
    assert str(error.value) == (
        "--wandb-workspace needs the `dashboards` extra (wandb_workspaces is not installed): "
        'pip install -e ".[dashboards]" (or make install)'
    )


class FakeGraphql:
    """W&B's GraphQL service as ``wandb.Api()`` reaches it: records each request, answers an upsert."""

    app_url = "https://wandb.test"

    def __init__(self) -> None:
        self.sent: list[dict] = []

    def execute_graphql(self, query: str, variables: dict) -> dict:
        name = f"nw-view{len(self.sent)}-v"
        self.sent.append(variables)
        return {"upsertView": {"view": {"id": f"id-{name}", "name": name}, "inserted": True}}


def test_saving_upserts_each_view_and_names_its_url(sweep):
    service = FakeGraphql()
    api = mock.Mock(spec=[])
    api._service_api = service
    with mock.patch("wandb.Api", return_value=api):
        line = write_workspaces(sweep, "me/lra")
    assert line == (
        "saved 3 W&B workspace view(s) in me/lra: https://wandb.test/me/lra?nw=view0 "
        "https://wandb.test/me/lra?nw=view1 https://wandb.test/me/lra?nw=view2"
    )
    assert [(sent["entityName"], sent["projectName"], sent["displayName"]) for sent in service.sent] == [
        ("me", "lra", "LRA: all tasks"),
        ("me", "lra", "LRA: listops"),
        ("me", "lra", "LRA: text"),
    ]
    (listops_filter,) = json.loads(service.sent[1]["spec"])["section"]["runSets"][0]["filters"]["filters"]
    assert (listops_filter["op"], listops_filter["value"]) == ("=", "listops")


def test_saving_without_a_login_fails_in_one_line(sweep, tmp_path, monkeypatch):
    for name in ("WANDB_API_KEY", "WANDB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "wandb-config"))
    with pytest.raises(WorkspaceError) as error:
        save_workspaces(build_workspaces(sweep, "me", "lra"))
    message = str(error.value)
    assert message.startswith("cannot save the W&B workspace: ") and "wandb login" in message
    assert "\n" not in message


@pytest.mark.slow  # python -m lra.report in a subprocess
def test_the_command_without_a_login_ends_in_one_error_line_after_the_report(sweep, tmp_path):
    env = {key: value for key, value in os.environ.items() if not key.startswith("WANDB_")}
    env |= {"NETRC": str(tmp_path / "no-netrc"), "WANDB_CONFIG_DIR": str(tmp_path / "wandb-config")}
    command = [
        "-m",
        "lra.report",
        "--runs",
        str(tmp_path),
        "--out",
        str(tmp_path / "out"),
        "--wandb-workspace",
    ]
    done = subprocess.run([sys.executable, *command, "me/lra"], capture_output=True, text=True, env=env)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith("error: cannot save the W&B workspace: ")
    assert (tmp_path / "out" / "lra_table.md").is_file()  # the report is written first


@pytest.mark.slow  # a sweep of two jobs of python -m lra in a subprocess
def test_a_real_sweeps_summaries_give_the_views_its_w_and_b_runs_need(data_root, tmp_path):
    command = ["-m", "attention=nystrom", "attention.num_landmarks=4,8", "logger=wandb"]
    done = lra([*command, *tiny_data_overrides(data_root, "num_workers=0")], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = find_runs([tmp_path / "multirun"])
    assert [(run.status, run.wandb_project, run.options) for run in runs] == [
        ("completed", "lra", {"attention.num_landmarks": "4"}),
        ("completed", "lra", {"attention.num_landmarks": "8"}),
    ]
    overview, listops = build_workspaces(runs, "me", "lra")
    (runset,) = spec(listops)["runSets"]
    assert [key["name"] for key in runset["grouping"]] == [
        "attention.value.name",
        "attention.value.num_landmarks",
    ]
    groups = {
        tuple(str(lookup(as_logged(run.config), key["name"])) for key in runset["grouping"]) for run in runs
    }
    assert groups == {("nystrom", "4"), ("nystrom", "8")}
    assert all(filter_keeps(runset["filters"], run) for run in runs)
    memory = "perf/peak_rss_mb" if "perf/peak_rss_mb" in runs[0].metrics else "perf/peak_gpu_mem_mb"
    assert spec(overview)["panelBankConfig"]["sections"][0]["panels"][3]["config"]["metrics"] == [memory]
