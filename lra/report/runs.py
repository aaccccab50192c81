"""Finished runs as the report reads them: one record per ``summary.json``, and metrics over seeds.

summary.json schemas: 1 (no ``schema`` key), 2 (``data.majority_share`` per split and
``metrics["test/acc_final"]``) and 3 (``pretrain``: null for a run trained from scratch, else how it was
self-pretrained; older schemas are from scratch). A run is *at chance* when its test accuracy is at most
the test split's majority-class share plus ``CHANCE_MARGIN``; schema-1 runs carry no share, so they are
never flagged. A self-pretrained run's variant carries ``SPT``, so it never shares a row with runs
trained from scratch. Each run carries its ``configuration`` (``lra.job.run_identity``: the job less its
seed); ``lra.report.configurations`` gives each configuration its row and its label.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import attention_zoo
from data_prep.small_sets import STAND_IN_SOURCE
from lra.job.run_identity import comparable, configuration_fingerprint, leaves, resolved
from lra.report.intervals import interval
from lra.results.summary_json import SUMMARY_FILE

SCHEMAS = (1, 2, 3)  # the summary.json layouts this report reads (lra.results.summary_json.SCHEMA among them)
CHANCE_MARGIN = 0.01  # one accuracy point
TEST_ACCURACIES = ("test/acc", "test/acc_final")  # at the selected checkpoint, at the final weights
DEFAULT_SIZE = (2, 64)  # (layers, width) of conf/model/lra.yaml
# A run's device counts among its settings: the same job on a CPU and a GPU is two rows (time, memory).
DEVICE = "device"


@dataclass(frozen=True)
class Run:
    """One ``summary.json``. ``variant``: the attention's name plus its non-default options (and ``SPT``
    when self-pretrained); ``protocol``: how it trained (schedule, clipping, selection window), in words;
    ``spt``: the self-pretraining label (``spt_label``), None from scratch; ``preset``: the
    ``experiment=`` it trained under (``protocol`` names it first); ``scratch_variant``: the
    variant of the same model trained from scratch (``variant`` itself for a run from scratch);
    ``data``: what ``data_labels`` says of its data ("" for the task's own); ``label``: the variant
    without its data and protocol, what a figure's panel of one data set and protocol names it by;
    ``configuration``: the fingerprint of its job less the seed, and the device it ran on; ``settings``:
    what it computes, its config less the keys that do not change that (``lra.job.run_identity.
    comparable``), by dotted key, and its ``device``;
    ``label_keys``: the dotted config keys its label names (non-default attention options, and what
    ``lra.report.configurations`` adds); ``overridden``: the keys its command line set (summary.json's
    ``overrides``), None where its summary does not record them."""

    path: Path
    task: str
    variant: str
    seed: int | None
    status: str
    error: str
    metrics: dict[str, float]
    device: str
    started: str
    finished: str
    protocol: str = "unknown"
    attention: str = "?"  # the registry name, without options
    schema: int = 1
    chance: float | None = None  # the test split's majority-class share (schema 2), 0-1
    wandb_project: str | None = None  # the W&B project it logged to, if any
    features: int | None = None  # the shared budget of approximate attentions, if set
    spt: str | None = None
    scratch_variant: str = ""
    pretrain_time_s: float | None = None  # the pretraining's wall seconds, when recorded
    config: dict = field(default_factory=dict)  # the resolved config
    options: dict[str, str] = field(default_factory=dict)  # the options its sweep varied: {key: value}
    data: str = ""
    label: str = ""
    preset: str | None = None  # the experiment= preset it trained under, when recorded
    configuration: str = ""
    settings: dict[str, object] = field(default_factory=dict)
    label_keys: tuple[str, ...] = ()
    overridden: tuple[str, ...] | None = None

    def size(self) -> tuple[int, int]:
        """(layers, width) of its encoder, from its config (``DEFAULT_SIZE`` where it records none)."""
        model = self.config.get("model") or {}
        return (int(model.get("depth", DEFAULT_SIZE[0])), int(model.get("dim", DEFAULT_SIZE[1])))

    def value(self, metric: str) -> float | None:
        """``metric`` from summary.json's metrics, or one the report derives (``DERIVED``)."""
        return DERIVED[metric](self) if metric in DERIVED else self.metrics.get(metric)

    def at_chance(self, metric: str = "test/acc") -> bool:
        """True when ``metric``, one of ``TEST_ACCURACIES`` (0-1), is at most the majority share plus
        ``CHANCE_MARGIN``; False for any other metric and for runs without a share."""
        value = self.metrics.get(metric) if metric in TEST_ACCURACIES else None
        return self.chance is not None and value is not None and value <= self.chance + CHANCE_MARGIN


def total_time(run: Run) -> float | None:
    """Training seconds including pretraining: ``perf/train_time_s`` (the fit that ends in the test)
    plus the pretraining's ``time_s`` for a self-pretrained run; None when either is unknown."""
    fit = run.metrics.get("perf/train_time_s")
    if fit is None or (run.spt and run.pretrain_time_s is None):
        return None
    return float(fit) + (run.pretrain_time_s or 0.0)


TOTAL_TIME = "total_time_s"  # derived: a self-pretrained run's time counts its pretraining
DERIVED: dict[str, Callable[[Run], float | None]] = {TOTAL_TIME: total_time}


def protocol_label(protocol: dict | None, preset: str | None = None) -> str:
    """``one_cycle, clip value 1.0, best after 20%``: a run's training protocol from its summary.json
    (attention dropout is an attention option, so it shows in the variant instead), after the preset
    it trained under (``experiment=skyformer: one_cycle, ...``)."""
    if preset:
        return f"experiment={preset}: {protocol_label(protocol)}"
    if not protocol:
        return "unknown"
    clip = (
        "no clipping"
        if protocol.get("clip") is None
        else f"clip {protocol['clip']} {protocol.get('clip_value')}"
    )
    window = protocol.get("select_after") or 0
    selection = f"best after {100 * window:g}%" if window else "best of all evaluations"
    if protocol.get("tested") == "final":
        selection = "final weights"
    return f"{protocol.get('schedule')}, {clip}, {selection}"


GENERATED = "generated data"  # the mark of a row whose data came from a built-in generator
# and of one whose data were random tokens (debug=fdr's stand-in for a missing set)
STAND_IN = STAND_IN_SOURCE
# summary.json's data source -> the marks of its row
SOURCE_MARKS = {"generator": [GENERATED], STAND_IN_SOURCE: [GENERATED, STAND_IN]}
SPT = "SPT"  # the mark of a self-pretrained row


def spt_label(pretrain: dict | None, config: dict) -> str | None:
    """``SPT``, with the choices that make another experiment of it (``loss=l1``, a compute-matched
    ``share=0.4``), for summary.json's ``pretrain`` record; None for a run from scratch. Runs that
    start from another run's pretrained weights (``pretrain.from``) share the row of those that
    pretrained themselves."""
    if pretrain is None:
        return None
    share = (config.get("pretrain") or {}).get("share")
    choices = [f"loss={pretrain['loss']}"] if pretrain.get("loss") not in (None, "ce") else []
    choices += [f"share={share:g}"] if share else []
    return " ".join([SPT, *choices])


def data_labels(config: dict, data: dict | None) -> list[str]:
    """What a row must say about its data: the prepared set when it is not the task's own
    (``dataset=listops-demo``), and ``generated data`` when a built-in generator made it instead of
    the LRA release or the real source (and ``random stand-in`` when it is random tokens), so that
    such runs never sit in a row that reads as the LRA number. ``data`` is summary.json's record of
    the set (older summaries have none: the config's dataset is named instead)."""
    task = config.get("task") or {}
    data = data or {}
    dataset = data.get("set") or task.get("dataset")
    labels = [f"dataset={dataset}"] if dataset not in (None, task.get("name")) else []
    return labels + SOURCE_MARKS.get(data.get("source"), [])


def attention_options(attention: str, config: dict) -> dict[str, str]:
    """``{"attention.num_landmarks": "num_landmarks=32"}``: the registry options of ``config["attention"]``
    that differ from the core's defaults."""
    chosen = config.get("attention") or {}
    defaults = attention_zoo.spec(attention).options if attention in attention_zoo.available() else {}
    changed = [key for key in defaults if key in chosen and chosen[key] != defaults[key]]
    return {f"attention.{key}": f"{key}={chosen[key]}" for key in changed}


def compose_label(attention: str, parts: Sequence[str]) -> str:
    """``nystrom`` or ``nystrom (num_landmarks=32, SPT)``."""
    return f"{attention} ({', '.join(parts)})" if parts else attention


def variant_label(attention: str, config: dict, data: dict | None = None, spt: str | None = None,
                  with_data: bool = True) -> str:  # fmt: skip
    """``nystrom`` or ``nystrom (num_landmarks=32)``: the attention's non-default options
    (``attention_options``), so sweeps over options give separate rows, then what ``data_labels``
    says of its data (unless not ``with_data``), then ``spt`` (``nystrom (num_landmarks=32, SPT)``)."""
    changed = list(attention_options(attention, config).values())
    changed += (data_labels(config, data) if with_data else []) + ([spt] if spt else [])
    return compose_label(attention, changed)


def load_run(path: Path) -> Run:
    """A run from its summary.json; an unreadable file becomes a run with status ``unreadable``."""
    try:
        summary = json.loads(path.read_text())
        schema = summary.get("schema", 1)
        if schema not in SCHEMAS:
            raise ValueError(f"summary.json schema {schema!r} is not one this report reads ({SCHEMAS})")
        majority = (summary.get("data") or {}).get("majority_share") or {}
        config = resolved(summary.get("config") or {})
        attention, data, pretrain = str(summary["attention"]), summary.get("data"), summary.get("pretrain")
        spt = spt_label(pretrain, config)
        return Run(
            path=path,
            task=str(summary["task"]),
            variant=variant_label(attention, config, data, spt),
            seed=summary.get("seed"),
            status=str(summary["status"]),
            error=str(summary.get("error") or ""),
            metrics=summary.get("metrics") or {},
            device=str(summary.get("device") or "unknown"),
            started=str(summary.get("started") or ""),
            finished=str(summary.get("finished") or ""),
            protocol=protocol_label(summary.get("protocol"), summary.get("preset")),
            preset=summary.get("preset"),
            attention=attention,
            schema=schema,
            chance=majority.get("test"),
            wandb_project=((config.get("logger") or {}).get("wandb") or {}).get("project"),
            features=config.get("features"),
            spt=spt,
            scratch_variant=variant_label(attention, config, data),
            pretrain_time_s=(pretrain or {}).get("time_s"),
            config=config,
            options=summary.get("options") or {},
            data=", ".join(data_labels(config, data)),
            label=variant_label(attention, config, data, spt, with_data=False),
            configuration=f"{configuration_fingerprint(config)} on {summary.get('device')}",
            settings={**leaves(comparable(config)), DEVICE: str(summary.get("device") or "unknown")},
            label_keys=tuple(attention_options(attention, config)),
            overridden=None if "overrides" not in summary else tuple(summary["overrides"]),
        )
    except (OSError, ValueError, KeyError, TypeError) as error:
        return Run(path, "?", "?", None, "unreadable", f"{type(error).__name__}: {error}", {}, "", "", "")


def find_runs(roots: Sequence[Path]) -> list[Run]:
    """Every summary.json under ``roots``, sorted by path."""
    return [load_run(path) for root in roots for path in sorted(root.rglob(SUMMARY_FILE))]


def rerun_key(run: Run) -> tuple:
    """What a rerun repeats: the task, the configuration and the seed (and the data, SPT and protocol
    its summary.json records beside its config, for summaries whose config omits them)."""
    return (run.task, run.configuration, run.variant, run.data, run.protocol, run.seed)


def latest_and_superseded(runs: Sequence[Run]) -> tuple[list[Run], list[tuple[Run, Run]]]:
    """The completed runs with one per ``rerun_key`` (the latest finished), and each earlier completed
    run of a key with the run that replaced it."""
    latest: dict[tuple, Run] = {}
    earlier: list[Run] = []
    for run in sorted((r for r in runs if r.status == "completed"), key=lambda r: r.finished):
        if (key := rerun_key(run)) in latest:
            earlier.append(latest[key])
        latest[key] = run
    return list(latest.values()), [(run, latest[rerun_key(run)]) for run in earlier]


def latest_per_seed(runs: Sequence[Run]) -> list[Run]:
    """Completed runs with one per configuration × seed: a rerun replaces the earlier one."""
    return latest_and_superseded(runs)[0]


@dataclass(frozen=True)
class Cell:
    """Mean and sample std (0 for one seed) of a metric over seeds, the number of seeds, how many of
    them are at chance, and the 95% confidence interval of the mean (Student's t; None for one seed)."""

    mean: float
    std: float
    count: int
    at_chance: int = 0
    ci: tuple[float, float] | None = None

    @classmethod
    def of(cls, values: Sequence[float], at_chance: int = 0) -> Cell:
        spread = statistics.stdev(values) if len(values) > 1 else 0.0
        return cls(statistics.fmean(values), spread, len(values), at_chance, interval(values))

    def format(self, digits: int = 2, with_interval: bool = False) -> str:
        """``35.00 ± 5.00 (3)``; ``with_interval``: ``35.00 ± 5.00 [22.58, 47.42] (3)``."""
        spread = f" ± {self.std:.{digits}f}" if self.count > 1 else ""
        if with_interval and self.ci is not None:
            spread += f" [{self.ci[0]:.{digits}f}, {self.ci[1]:.{digits}f}]"
        flagged = f", {self.at_chance} at chance" if self.at_chance else ""
        return f"{self.mean:.{digits}f}{spread} ({self.count}{flagged})"


def metric_cells(runs: Sequence[Run], metric: str, scale: float = 1.0) -> dict[str, dict[str, Cell]]:
    """variant -> task -> Cell of ``metric × scale`` over the runs that report it (``Run.value``;
    ``Run.at_chance`` of ``metric`` counted, which only an accuracy can be)."""
    values: dict[str, dict[str, list[Run]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        if run.value(metric) is not None:
            values[run.variant][run.task].append(run)
    return {
        variant: {
            task: Cell.of(
                [float(r.value(metric)) * scale for r in group], sum(r.at_chance(metric) for r in group)
            )
            for task, group in tasks.items()
        }
        for variant, tasks in values.items()
    }
