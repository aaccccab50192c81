"""The report in W&B: ``python -m lra.report --wandb`` logs every markdown table of the report as a
``wandb.Table`` (so a workspace shows the same rows as ``lra_table.md``) and every figure as a
``wandb.Image``, to one run of job type ``report`` in the project the runs logged to (``lra`` when they
name none), offline unless ``WANDB_MODE`` says otherwise, like every run.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

from lra.report.runs import Run

DEFAULT_PROJECT = "lra"


def markdown_tables(text: str) -> Iterator[tuple[str, list[str], list[list[str]]]]:
    """(key, header, rows) of each table in the markdown ``text``; the key is the headings above it
    (``skyformer_paper/table_1_test_accuracy``), numbered when a section holds several tables."""
    headings: dict[int, str] = {}
    counts: Counter[str] = Counter()
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if match := re.match(r"(#+) (.*)", line):
            level = len(match.group(1))
            headings = {k: v for k, v in headings.items() if k < level} | {level: slug(match.group(2))}
        if line.startswith("|") and index + 1 < len(lines) and lines[index + 1].startswith("|---"):
            header = cells(line)
            index += 2
            rows = []
            while index < len(lines) and lines[index].startswith("|"):
                rows.append(cells(lines[index]))
                index += 1
            key = "/".join(headings[level] for level in sorted(headings) if level > 1) or "report"
            counts[key] += 1
            yield (key if counts[key] == 1 else f"{key}_{counts[key]}"), header, rows
            continue
        index += 1


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def slug(heading: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", heading.lower()).strip("_")[:60]


def runs_project(runs: Sequence[Run]) -> str:
    """The W&B project most of the runs logged to."""
    projects = Counter(run.wandb_project for run in runs if run.wandb_project)
    return projects.most_common(1)[0][0] if projects else DEFAULT_PROJECT


def log_report(text: str, figures: Sequence[Path], runs: Sequence[Run], command: str, folder: Path) -> str:
    """Log the report's tables and ``figures`` to a new W&B run under ``folder``; one line saying where."""
    import wandb

    project = runs_project(runs)
    mode = os.environ.get("WANDB_MODE", "offline")
    run = wandb.init(
        project=project, job_type="report", name="lra-report", mode=mode, dir=str(folder),
        config={"command": command},
    )  # fmt: skip
    tables = {key: wandb.Table(columns=header, data=rows) for key, header, rows in markdown_tables(text)}
    images = {f"figures/{path.stem}": wandb.Image(str(path)) for path in figures}
    run.log({**tables, **images})
    where = Path(run.dir).parent
    run.finish()
    logged = f"logged {len(tables)} table(s) and {len(images)} figure(s)"
    return f"{logged} to W&B project {project} ({mode}: {where})"
