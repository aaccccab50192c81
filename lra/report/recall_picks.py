"""Which runs stand for each configuration of the recall tasks: the best over a preset's tuning axes.

A recall preset declares the keys its sweep tunes (``tuning_axes``: the learning rate, and MAD's weight
decay too); its *configuration* is everything else of the job, less the seed
(``lra.job.run_identity.comparable``), within one task, data, protocol and preset. Runs that differ in
anything else are never merged: another vocabulary, number of pairs or heads, width, step count, preset
or data set is another configuration. Within one, the runs of each tuning value are averaged over seeds
(validation accuracy), and the value with the best mean is picked, as the sources pick:

- Zoology's Figure 2 takes, per model, the maximum validation accuracy over its learning rates
  (HazyResearch/zoology ``zoology/analysis/paper/zoology_paper/zoology_figure2.py`` L20-24);
- MAD scores a level by its best run over the learning-rate and weight-decay sweep
  (athms/mad-lab ``mad/analysis.py`` L120-201).

The recall tasks validate on their test set, as their sources evaluate during training
(``lra/data/recall.py``), so the pick and its test accuracy read the same examples, as in the sources.
The pick's test accuracy is the mean over the seeds at the picked value. A pick at the highest or the
lowest value swept of an axis, or from one value only, is *at an edge*: the sweep does not show that
another value would not do better, so no verdict that a mixer cannot recall rests on it.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce

from lra.config.naming import short_keys
from lra.job.run_identity import comparable, job_fingerprint, without_key
from lra.report.runs import Run

VALIDATION = "val/acc_best"
TEST = "test/acc"


def tuning_axes(run: Run) -> tuple[str, ...]:
    """The dotted keys the run's preset tunes (its ``tuning_axes``; none for a plain run)."""
    return tuple(run.config.get("tuning_axes") or ())


def tuning_values(run: Run) -> tuple:
    """The run's value of each of its tuning axes, in order."""
    return tuple(run.settings.get(axis) for axis in tuning_axes(run))


def configuration_key(run: Run) -> tuple:
    """What a pick is chosen within: the task, data, protocol (with the preset) and the job less its seed
    and tuning axes."""
    job = reduce(without_key, ("seed", *tuning_axes(run)), comparable(run.config))
    return (run.task, run.data, run.protocol, tuning_axes(run), job_fingerprint(job))


@dataclass(frozen=True)
class Pick:
    """One configuration of a recall task (module docstring): ``runs``, every run of it; ``chosen``,
    the runs (one a seed) at the picked tuning values; ``swept``, each axis's values tried, sorted."""

    runs: tuple[Run, ...]
    chosen: tuple[Run, ...]
    swept: dict[str, tuple]

    @property
    def run(self) -> Run:
        """A run of the picked values: what the pick's configuration and labels are read from."""
        return self.chosen[0]

    @property
    def picked(self) -> dict[str, object]:
        """Each tuning axis -> the picked value."""
        return dict(zip(self.swept, tuning_values(self.run), strict=True))

    def test(self) -> tuple[float, float, int]:
        """(mean, sample std, seeds) of the test accuracy at the picked values."""
        values = [run.value(TEST) for run in self.chosen]
        return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0, len(values)

    def validation(self) -> float:
        return statistics.fmean(run.value(VALIDATION) for run in self.chosen)

    def tried(self) -> int:
        """How many tuning values (combinations) the pick was made from."""
        return len({tuning_values(run) for run in self.runs})

    def tried_text(self) -> str:
        """``best of 4 rates``, ``best of 6 (lr × weight_decay)``; ``-`` without tuning axes."""
        names = list(short_keys(list(self.swept)).values())
        if not names:
            return "-"
        count = self.tried()
        what = ("rate" if count == 1 else "rates") if names == ["lr"] else f"({' × '.join(names)})"
        return f"best of {count} {what}"

    def edge(self) -> str:
        """ "" when the pick is inside every axis's sweep, else what makes it an edge (module docstring):
        ``highest lr swept``, ``lowest lr swept``, ``one lr only``."""
        names = short_keys(list(self.swept))
        edges = []
        for axis, values in self.swept.items():
            value = self.picked[axis]
            if len(values) == 1:
                edges.append(f"one {names[axis]} only")
            elif value in (values[0], values[-1]):
                edges.append(f"{'highest' if value == values[-1] else 'lowest'} {names[axis]} swept")
        return ", ".join(edges)

    def picked_text(self) -> str:
        """``lr=0.01`` (``-`` for a run without tuning axes)."""
        names = short_keys(list(self.swept))
        return ", ".join(f"{names[axis]}={value:g}" for axis, value in self.picked.items()) or "-"


def best_values(runs: Sequence[Run]) -> tuple:
    """The tuning values whose runs have the best mean validation accuracy over seeds (the lowest
    values on a tie)."""
    by_value: dict[tuple, list[float]] = defaultdict(list)
    for run in runs:
        by_value[tuning_values(run)].append(run.value(VALIDATION))
    return max(sorted(by_value), key=lambda values: statistics.fmean(by_value[values]))


def picks(runs: Sequence[Run]) -> list[Pick]:
    """One ``Pick`` per configuration of ``runs`` (completed recall runs with a test and a validation
    accuracy; others are left out), in the order of their first run."""
    groups: dict[tuple, list[Run]] = defaultdict(list)
    for run in runs:
        if run.status == "completed" and run.value(TEST) is not None and run.value(VALIDATION) is not None:
            groups[configuration_key(run)].append(run)
    chosen = []
    for members in groups.values():
        best = best_values(members)
        swept = {
            axis: tuple(sorted({run.settings.get(axis) for run in members}))
            for axis in tuning_axes(members[0])
        }
        at_best = tuple(sorted((run for run in members if tuning_values(run) == best), key=seed_order))
        chosen.append(Pick(tuple(members), at_best, swept))
    return chosen


def seed_order(run: Run) -> int:
    return run.seed if isinstance(run.seed, int) else 0
