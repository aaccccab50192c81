"""How far a sweep is: ``python -m lra.report --progress [--runs SWEEP_DIR ...]``.

Counts the jobs under the folders, per task × attention (with the options the sweep varies, as the job
names carry them, and ``SPT`` for a self-pretrained job, swept or not), as ``completed``, ``running``,
``interrupted``, ``killed`` and ``failed`` (``failed`` or ``nan``). A job folder is one with a ``run.json``,
``resumed.json`` or ``summary.json``; its run is the folder itself or the one its ``resumed.json``
points to (a resumed or skipped job), and each run counts once. A run whose summary.json does not say
completed, failed or nan is ``killed`` when its run lock's last holder, on this host, is gone without
having written it (SIGKILL, e.g. the out-of-memory killer, or a crash: ``lra.results.killed_jobs``,
whose reason quotes the kernel log where it can be read); else ``running`` when a file in its folder
changed after that summary (or it has none) within the last ``ACTIVE_SECONDS``, else ``interrupted``
(stopped by a signal, or ended before it could write a summary, on a host this cannot look at).

Each job that failed or was interrupted then says why, one line each: its summary.json's ``error``, cut
between words (``lra.one_line``); when every job failed for one reason, that reason stands once above
the table instead. ``--since``, ``--match`` and ``--exclude-failed`` choose the runs counted
(``lra.report.selection``).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lra.config.naming import short_keys
from lra.job.run_identity import RUN_FILE
from lra.one_line import one_line
from lra.provenance import markdown_table
from lra.report.runs import SPT, Run
from lra.report.selection import Selection
from lra.results.killed_jobs import KILLED, killed_summary, silent_end, silent_end_reason
from lra.results.summary_json import POINTER_FILE, SUMMARY_FILE, run_folder
from lra.results.summary_tables import shared_failure

ACTIVE_SECONDS = 600  # a run that wrote nothing for this long is no longer counted as running
STATES = ("completed", "running", "interrupted", "killed", "failed")
FINAL_STATES = {"completed": "completed", "failed": "failed", "nan": "failed"}
PRETRAIN = "pretrain"  # the config group (and swept option) that chooses self-pretraining
UNFINISHED = ("interrupted", "killed", "failed")  # the states whose jobs say why
REASON_WIDTH = 200  # characters of a job's reason on its line (a kernel log line fits)
NO_SUMMARY = "stopped before writing its summary.json"


def read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def run_folders(roots: Sequence[Path]) -> list[Path]:
    """The run of every job folder under ``roots``, each once, sorted."""
    markers = (RUN_FILE, POINTER_FILE, SUMMARY_FILE)
    jobs = {path.parent for root in roots for marker in markers for path in Path(root).rglob(marker)}
    return sorted({run_folder(job).resolve() for job in jobs})


def last_change(run_dir: Path) -> float:
    """The newest modification time of a file in the run's folder, summary.json aside (0: none)."""
    times = [p.stat().st_mtime for p in run_dir.rglob("*") if p.is_file() and p.name != SUMMARY_FILE]
    return max(times, default=0.0)


def run_state(run_dir: Path, summary: dict[str, Any], now: float) -> str:
    """One of ``STATES`` for the run in ``run_dir``, ``summary`` its summary.json (module docstring)."""
    summary_file = run_dir / SUMMARY_FILE
    final = FINAL_STATES.get(summary.get("status"))
    if final is not None:
        return final
    if silent_end(run_dir) is not None:
        return KILLED
    changed = last_change(run_dir)
    after_summary = not summary_file.is_file() or changed > summary_file.stat().st_mtime
    return "running" if after_summary and now - changed < ACTIVE_SECONDS else "interrupted"


def run_label(run_dir: Path, summary: dict[str, Any]) -> tuple[str, str]:
    """(task, ``attention (option=value, ..., SPT)``) of a run, from its summary.json (``summary``) or
    run.json; a swept ``pretrain`` option gives way to ``SPT``, so that a sweep's ``pretrain=none``
    jobs count with single runs from scratch."""
    run_file = read_json(run_dir / RUN_FILE)
    config = summary.get("config") or run_file.get("config") or {}
    task = summary.get("task") or (config.get("task") or {}).get("name") or "?"
    attention = summary.get("attention") or (config.get("attention") or {}).get("name") or "?"
    options = summary.get("options") or run_file.get("options") or {}
    options = {key: value for key, value in options.items() if key != PRETRAIN}
    short = short_keys(list(options))
    parts = [f"{short[key]}={value}" for key, value in options.items()]
    parts += [SPT] if (config.get(PRETRAIN) or {}).get("mode", "none") != "none" else []
    return task, f"{attention} ({', '.join(parts)})" if parts else attention


def unfinished_reason(run_dir: Path, summary: dict[str, Any], state: str) -> str:
    """Why the run in ``run_dir`` in ``state`` (one of ``UNFINISHED``) did not complete."""
    holder = silent_end(run_dir) if state == KILLED else None
    return silent_end_reason(holder) if holder else summary.get("error") or NO_SUMMARY


def with_killed(runs: Sequence[Run], roots: Sequence[Path]) -> list[Run]:
    """``runs`` (from the summary.json files under ``roots``) with each run that was killed without a
    word (``lra.results.killed_jobs``) as a ``killed`` run in place of the summary it left stale, if any."""
    killed = []
    for run_dir in run_folders(roots):
        if (summary := killed_summary(run_dir)) is not None:
            variant = run_label(run_dir, summary)[1]
            error, config = summary["error"], summary["config"]
            path, seed, attention = run_dir / SUMMARY_FILE, config.get("seed"), summary["attention"]
            killed.append(Run(path, summary["task"], variant, seed, KILLED, error, {}, "", "", "",
                              attention=attention, config=config, options=summary["options"]))  # fmt: skip
    folders = {run.path.parent for run in killed}
    return [run for run in runs if run.path.parent.resolve() not in folders] + killed


def why_lines(failures: Sequence[tuple[str, str, str]], jobs: int) -> tuple[list[str], list[str]]:
    """(lines above the table, lines below it) that say why each of ``failures`` (job, state, reason)
    did not complete; ``jobs`` counts every job, so that one reason shared by all of them is said once."""
    shared = shared_failure([(state, reason) for _, state, reason in failures], jobs)
    if shared:
        return [shared, ""], []
    if not failures:
        return [], []
    lines = [f"- {job} ({state}): {one_line(reason, REASON_WIDTH)}" for job, state, reason in failures]
    return [], ["", "Why jobs did not complete:", *lines]


def progress_table(
    roots: Sequence[Path], now: float | None = None, selection: Selection | None = None
) -> str:
    """A markdown table of job counts per task × attention and state, with a total row, and why each
    failed or interrupted job did not complete (module docstring), over the runs ``selection``
    chooses."""
    now = time.time() if now is None else now
    selection = selection or Selection()
    counts: dict[tuple[str, str], Counter] = {}
    failures = []
    for run_dir in run_folders(roots):
        summary = read_json(run_dir / SUMMARY_FILE)
        state = run_state(run_dir, summary, now)
        if not selection.picks([run_dir], state, str(summary.get("started") or "")):
            continue
        counts.setdefault(run_label(run_dir, summary), Counter())[state] += 1
        if state in UNFINISHED:
            job = f"{run_dir.parent.name}/{run_dir.name}"
            failures.append((job, state, unfinished_reason(run_dir, summary, state)))
    if not counts:
        searched = ", ".join(str(root) for root in roots)
        chosen = f" ({selection.describe()})" if selection.describe() else ""
        raise FileNotFoundError(
            f"no job folders (run.json, resumed.json or summary.json) under {searched}{chosen}"
        )
    total = sum(counts.values(), Counter())
    rows = [[task, variant, *(count[s] for s in STATES)] for (task, variant), count in sorted(counts.items())]
    rows.append(["all", "", *(total[s] for s in STATES)])
    above, below = why_lines(failures, total.total())
    return "\n".join([*above, markdown_table(["task", "attention", *STATES], rows), *below])
