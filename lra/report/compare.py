"""``python -m lra.report --compare A B``: the paired difference of two variants' test accuracy over the
seeds both ran, per task (and data set and protocol, as the figures' panels), with its 95% confidence
interval (``lra.report.intervals``)::

    nystrom − standard on listops: −0.80 [−2.10, 0.50] over 3 seeds

``A`` and ``B`` are variants as the figures name them (``Run.label``): an attention, with its
non-default options and ``SPT`` where they apply (``nystrom``, ``'nystrom (num_landmarks=32)'``), or as
the tables print them, with their data marks (``'nystrom (dataset=listops-demo, generated data)'``). A
bare attention name stands for its variant when the runs have only one (``s4d`` for ``'s4d
(d_state=16)'`` after a sweep with ``features=16``). Each seed's difference is A's accuracy minus
B's, in points; the interval is that of their mean. A variant is one configuration
(``lra.report.configurations``), whose label names every option in which it differs from the others of
its panel, so the paired runs differ in what their labels say and nothing else.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from lra.report.intervals import interval
from lra.report.panels import Panel, group_runs
from lra.report.runs import Run, latest_per_seed

MINUS = "−"


class CompareError(ValueError):
    """Why ``--compare`` has nothing to say, in one line."""


def signed(value: float, plus: str = "") -> str:
    return f"{value:{plus}.2f}".replace("-", MINUS)


def where(panel: Panel, several_protocols: bool) -> str:
    """The task, then its data set and protocol where they need saying."""
    context = [panel.data] if panel.data else []
    context += [panel.protocol] if several_protocols else []
    return f"{panel.task} ({'; '.join(context)})" if context else panel.task


def paired_line(first: str, second: str, scope: str, a: dict, b: dict) -> str:
    """One task's line: the mean difference over the shared seeds with its interval, or why none."""
    head = f"{first} {MINUS} {second} on {scope}:"
    shared = sorted(set(a) & set(b), key=str)
    if not shared:
        return f"{head} no shared seeds ({first}: {sorted(a, key=str)}; {second}: {sorted(b, key=str)})"
    differences = [a[seed] - b[seed] for seed in shared]
    bounds = interval(differences)
    mean = signed(statistics.fmean(differences), "+")
    if bounds is None:
        return f"{head} {mean} over 1 seed (no interval from one seed)"
    return f"{head} {mean} [{signed(bounds[0])}, {signed(bounds[1])}] over {len(shared)} seeds"


def variant(name: str, completed: Sequence[Run]) -> str | None:
    """The variant ``name`` means: itself, or the one variant of the attention it names; None if neither.
    A ``CompareError`` when the attention has several variants (configurations), naming each."""
    labels = {run.label for run in completed}
    if name in labels:
        return name
    printed = {run.variant: run.label for run in completed}
    if name in printed:
        return printed[name]
    of_attention = sorted({run.label for run in completed if run.attention == name})
    if len(of_attention) > 1:
        several = ", ".join(of_attention)
        raise CompareError(f"--compare: {name!r} ran as several variants; name one: {several}")
    return of_attention[0] if of_attention else None


def compare_lines(runs: Sequence[Run], first: str, second: str, metric: str = "test/acc") -> list[str]:
    """A line per task (× data set × protocol) where both variants have completed runs."""
    completed = [run for run in latest_per_seed(runs) if run.metrics.get(metric) is not None]
    resolved = [variant(name, completed) for name in (first, second)]
    unknown = [name for name, found in zip((first, second), resolved, strict=True) if found is None]
    if unknown:
        named, labels = ", ".join(map(repr, unknown)), sorted({run.label for run in completed})
        raise CompareError(f"--compare: no completed run of {named}; the runs' variants: {', '.join(labels)}")
    first, second = resolved
    groups = group_runs(completed)
    several = len({panel.protocol for panel in groups}) > 1
    lines = []
    for panel, members in groups.items():
        a, b = ({run.seed: 100 * float(run.metrics[metric]) for run in members if run.label == label}
                for label in (first, second))  # fmt: skip
        if a and b:
            lines.append(paired_line(first, second, where(panel, several), a, b))
    if not lines:
        raise CompareError(f"--compare: {first!r} and {second!r} never ran the same task, data and protocol")
    return lines
