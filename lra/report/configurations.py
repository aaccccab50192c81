"""One row per configuration, labelled by what differs: ``standard (lr=0.001)`` beside
``standard (lr=1e-05)``, ``nystrom (devices=2, max_steps=400)`` beside ``nystrom``.

A run's configuration is its job less the seed (``lra.job.run_identity.configuration_fingerprint``) on
its device, so two runs that differ in any option that changes what they compute never share a row.
Labels name options as the command lines did: among the completed runs of a figure panel (task × data
× protocol, ``lra.report.panels``), an option *varies* when its values differ; a row's label names the
varying options its run's command line set (summary.json's ``overrides``), after the attention's
non-default options and before its data marks and ``SPT``. A label so depends only on its own run and
on what varies beside it: a run that joins the set with another option changed adds that option to its
own label, never takes one from the others'. A run whose summary records no command line (written
before it was recorded) names the varying options where its value is not the *usual* one, the one most
runs have, or where two values tie for most. The report's header gives the usual values. What a row's
name already says is not repeated: the attention's options (which ``features`` sets), the pretraining
choices of its ``SPT`` label, the ``pretrain.*`` keys of runs from scratch (they ignore them). Where two
configurations of a task still read the same (a key one of them lacks, or the device), both labels name
every key in which they differ.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from lra.config.naming import short_keys
from lra.report.runs import Run, compose_label

# Said by the row already: its attention's options (which ``features`` sets) and its SPT label's choices.
SKIPPED = ("seed", "features", "attention.", "pretrain.share", "pretrain.loss")
PRETRAIN = "pretrain."
UNSET = "unset"
HEADLINE = (  # keys the header states when every run shares them
    "task.lr", "task.batch_size", "trainer.max_steps", "trainer.devices", "trainer.precision",
    "model.dim", "model.depth", "model.num_heads",
)  # fmt: skip


UNSET_VALUE = object()  # a key a run's config lacks


def shown(value: Any) -> str:
    return UNSET if value is UNSET_VALUE else str(value)


def distinct(runs: Sequence[Run], key: str) -> set[str]:
    """The values ``key`` takes among ``runs`` (a missing key as a value of its own)."""
    return {value_of(run, key) for run in runs}


def varying_keys(runs: Sequence[Run], skipped: Sequence[str] = SKIPPED) -> list[str]:
    """The dotted keys whose values differ between ``runs`` (a key a run lacks counts as a value of its
    own), less ``skipped`` prefixes; the ``pretrain.*`` keys compared among self-pretrained runs only."""
    keys = sorted({key for run in runs for key in run.settings if not key.startswith(tuple(skipped))})
    among = {key: [run for run in runs if run.spt or not key.startswith(PRETRAIN)] for key in keys}
    return [key for key in keys if len(distinct(among[key], key)) > 1]


def attention_parts(run: Run) -> dict[str, str]:
    """dotted key -> ``name=value`` of each non-default attention option ``run``'s label names."""
    chosen = run.config.get("attention") or {}
    options = [key.split(".", 1)[1] for key in run.label_keys if key.startswith("attention.")]
    return {f"attention.{option}": f"{option}={chosen[option]}" for option in options if option in chosen}


def relabelled(run: Run, keys: Sequence[str], names: dict[str, str]) -> Run:
    """``run`` named with its attention's options, its values of ``keys``, its data and ``SPT``."""
    attention = attention_parts(run)
    own = [key for key in keys if key not in attention and (run.spt or not key.startswith(PRETRAIN))]
    values = {key: f"{names[key]}={value_of(run, key)}" for key in own}
    every = [*attention.values(), *values.values()]
    scratch = [*attention.values(), *(values[key] for key in own if not key.startswith(PRETRAIN))]
    data, spt = [run.data] if run.data else [], [run.spt] if run.spt else []
    return replace(
        run,
        variant=compose_label(run.attention, every + data + spt),
        scratch_variant=compose_label(run.attention, scratch + data),
        label=compose_label(run.attention, every + spt),
        label_keys=(*attention, *own),
    )


def usual_values(runs: Sequence[Run]) -> dict[str, str | None]:
    """Each key that varies among ``runs`` (``varying_keys``) -> its usual value: the one most of them
    have (shown), or None where two values tie for most."""
    usual: dict[str, str | None] = {}
    for key in varying_keys(runs):
        counts = Counter(value_of(run, key) for run in runs if run.spt or not key.startswith(PRETRAIN))
        (first, most), *rest = counts.most_common()
        usual[key] = None if rest and rest[0][1] == most else first
    return usual


def value_of(run: Run, key: str) -> str:
    """``run``'s value of the dotted ``key``, as a label shows it (``unset`` where it has none)."""
    return shown(run.settings.get(key, UNSET_VALUE))


def panel_of(run: Run) -> tuple[str, str, str]:
    """The figure panel a run is drawn in: task, data marks, protocol (``lra.report.panels.Panel``)."""
    return (run.task, run.data, run.protocol)


def panel_usual_values(runs: Sequence[Run]) -> dict[tuple[str, str, str], dict[str, str | None]]:
    """``usual_values`` of the completed runs of each panel."""
    panels: dict[tuple[str, str, str], list[Run]] = defaultdict(list)
    for run in runs:
        if run.status == "completed":
            panels[panel_of(run)].append(run)
    return {panel: usual_values(members) for panel, members in panels.items()}


def label_configurations(runs: Sequence[Run]) -> list[Run]:
    """``runs``, each label naming the options in which it differs from its panel's usual values, or
    whose values tie (module docstring); the protocol is added after, by
    ``lra.report.document.split_by_protocol``."""
    usual = panel_usual_values(runs)
    labelled = []
    for run in runs:
        values = usual.get(panel_of(run), {})
        labelled.append(relabelled(run, named_keys(run, values), short_keys(list(values))))
    return separate_collisions(labelled)


def named_keys(run: Run, usual: dict[str, str | None]) -> list[str]:
    """The varying keys (``usual``: key -> its usual value) that ``run``'s label names (module
    docstring): those its command line set, or for a run that records none, those where its value is
    not the usual one."""
    if run.overridden is not None:
        return [key for key in usual if key in run.overridden]
    return [key for key, value in usual.items() if value is None or value_of(run, key) != value]


def separate_collisions(runs: Sequence[Run]) -> list[Run]:
    """``runs``, where two configurations of one task × protocol read the same, each named by every key
    in which that label's configurations differ."""
    groups: dict[tuple, list[Run]] = defaultdict(list)
    for run in runs:
        groups[(run.task, run.protocol, run.variant)].append(run)
    fixed = {}
    for members in groups.values():
        if len({run.configuration for run in members}) > 1:
            keys = varying_keys(members, skipped=("seed",))
            fixed |= {id(run): relabelled(run, keys, short_keys(keys)) for run in members}
    return [fixed.get(id(run), run) for run in runs]


def common_options_line(runs: Sequence[Run]) -> str:
    """The header line of the ``HEADLINE`` options every run shares ("" where none)."""
    same = [key for key in HEADLINE if runs and key in runs[0].settings and len(distinct(runs, key)) == 1]
    names = short_keys(list(HEADLINE))
    common = ", ".join(f"{names[key]}={value_of(runs[0], key)}" for key in same)
    return f"- the same for every run: {common}" if common else ""


def usual_values_line(runs: Sequence[Run]) -> str:
    """The header line of each panel's usual values: what a label that does not name an option means."""
    panels = {panel: values for panel, values in panel_usual_values(runs).items() if values}
    parts = []
    several = len({protocol for _, _, protocol in panels}) > 1
    for (task, data, protocol), values in sorted(panels.items()):
        names = short_keys(list(values))
        usual = [f"{names[key]}={value}" if value is not None else f"{names[key]} (values tie)"
                 for key, value in values.items()]  # fmt: skip
        where = ", ".join([*([data] if data else []), *([protocol] if several else [])])
        parts.append(f"{task}{f' ({where})' if where else ''}: {', '.join(usual)}")
    if not parts:
        return ""
    lead = "- the options that vary, with the value most runs of the same "
    tail = " have (a row's label names the varying options its own command line set): "
    return lead + f"task{' and protocol' if several else ''}{tail}" + "; ".join(parts)
