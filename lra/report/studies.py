"""The report's section on hyperparameter searches: one subsection per Optuna study (``hparams_search=lra``).

Each study found in an ``optuna.db`` or ``*.journal`` file under the runs folder (or in a given
storage) gets its best val/acc_best and parameters, its trials completed / failed / interrupted /
running, and two plots from Optuna's own matplotlib visualisation: the optimisation history and the
parameter importances (PED-ANOVA: how far each parameter's values among the best completed trials,
Optuna's default top 10%, stray from its values among all of them; no scikit-learn needed)::

    python -m lra.report.studies --runs multirun [--out outputs/report/studies] [--storage URL_OR_PATH]

Without the ``search`` extra, or with a storage that cannot be opened, the section says so in one line
and the rest of the report is written.
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lra.config.errors import ConfigError
from lra.config.extras import SEARCH, require
from lra.provenance import markdown_table, rerun_command
from lra.results.plotting import agg_pyplot, save_figure
from lra.search.study import study_files

OBJECTIVE = "val/acc_best"
TITLE_WIDTH = 70  # characters of a plot title's line at fontsize 9 over the axes of a 7-inch figure


def file_stem(study_name: str) -> str:
    """A study name as a file name (``/`` and other odd characters to ``_``)."""
    return re.sub(r"[^A-Za-z0-9=._-]", "_", study_name)


def save_plot(ax: Any, path: Path, title: str) -> Path:
    """Save Optuna's plot ``ax`` with ``title`` (wrapped to the figure's width) in place of its own."""
    figure = ax.get_figure()
    for side in ("left", "right"):  # Optuna titles its importance plot on the left
        ax.set_title("", loc=side)
    ax.set_title("\n".join(textwrap.fill(line, TITLE_WIDTH) for line in title.splitlines()), fontsize=9)
    figure.set_size_inches(7, 4)
    figure.tight_layout()
    (written,) = save_figure(figure, path, formats=(".png",))
    return written


def study_plots(study: Any, out_dir: Path) -> dict[str, Path]:
    """Optuna's optimisation-history and parameter-importance plots of ``study`` as PNGs in ``out_dir``;
    the importance plot only with 2 or more completed trials."""
    agg_pyplot()
    import optuna
    from optuna.visualization import matplotlib as optuna_plots

    from lra.search.trials import trial_counts

    out_dir.mkdir(parents=True, exist_ok=True)
    stem = file_stem(study.study_name)
    plots: dict[str, Path] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        # Trials that all tie (short trials often do) give equal importances, which the plot shows.
        warnings.filterwarnings("ignore", message=".*importances will be equal")
        history = optuna_plots.plot_optimization_history(study, target_name=OBJECTIVE)
        plots["optimisation history"] = save_plot(
            history, out_dir / f"{stem}-history.png", f"{study.study_name}\noptimisation history"
        )
        completed = trial_counts(study.get_trials(deepcopy=False))["completed"]
        if completed >= 2:
            evaluator = optuna.importance.PedAnovaImportanceEvaluator()
            importance = optuna_plots.plot_param_importances(
                study, evaluator=evaluator, target_name=OBJECTIVE
            )
            plots["parameter importance"] = save_plot(
                importance,
                out_dir / f"{stem}-importance.png",
                f"{study.study_name}\nparameter importance (PED-ANOVA, {completed} trials)",
            )
    return plots


def format_param(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def study_markdown(study: Any, storage: str, plots: dict[str, Path], out_dir: Path) -> str:
    from lra.search.trials import trial_counts

    counts = trial_counts(study.get_trials(deepcopy=False))
    skipped = f", {counts['skipped']} asked past n_trials and not run" if counts["skipped"] else ""
    lines = [
        f"### Study `{study.study_name}`",
        "",
        f"Storage `{storage}`; trials: {counts['completed']} completed, {counts['failed']} failed, "
        f"{counts['interrupted']} interrupted, {counts['running']} running{skipped}.",
    ]
    if counts["completed"]:
        best = study.best_trial
        lines += [
            f"Best {OBJECTIVE}: {100 * best.value:.2f}% (trial {best.number}).",
            "",
            markdown_table(
                ("parameter", "best value"), [(k, format_param(v)) for k, v in best.params.items()]
            ),
        ]
    lines += [""] + [f"![{title}]({path.relative_to(out_dir)})" for title, path in plots.items()]
    return "\n".join(lines)


def studies_section(root: Path, out_dir: Path, storages: Sequence[str] = ()) -> str:
    """The markdown section on every study in ``storages`` and in the study files under ``root``; the
    plots are written to ``out_dir``. An empty string when there is no study; a study that cannot be
    read is one line on stderr."""
    all_storages = [*storages, *study_files(root)]
    if not all_storages:  # no search: Optuna (the `search` extra) is not needed
        return ""
    try:
        require(SEARCH, "the report's section on hyperparameter searches")
    except ConfigError as error:
        print(f"skipped: {error}", file=sys.stderr)
        return ""
    import optuna

    from lra.search.storage import open_storage

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    parts = []
    for storage in all_storages:
        try:
            backend = open_storage(storage)
        except ConfigError as error:
            print(f"skipped: {error}", file=sys.stderr)
            continue
        for summary in optuna.get_all_study_summaries(backend):
            study = optuna.load_study(study_name=summary.study_name, storage=backend)
            parts.append(study_markdown(study, storage, study_plots(study, out_dir), out_dir))
    if not parts:
        return ""
    return "\n\n".join(["## Hyperparameter searches", *parts])


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    description = __doc__.split("\n\n")[0]
    parser = argparse.ArgumentParser(prog="python -m lra.report.studies", description=description)
    parser.add_argument("--runs", type=Path, default=Path("multirun"), help="folder searched for studies")
    parser.add_argument(
        "--out", type=Path, default=Path("outputs/report/studies"), help="where studies.md and its plots go"
    )
    parser.add_argument(
        "--storage", action="append", default=[], help="another study (SQLAlchemy URL or PATH.journal)"
    )
    args = parser.parse_args(argv)
    section = studies_section(args.runs, args.out, args.storage)
    if not section:
        print(f"no study in {args.runs} or {args.storage}")
        return 1
    command = rerun_command("lra.report.studies", argv)
    path = args.out / "studies.md"
    path.write_text(f"{section}\n\nWritten by `{command}`.\n")
    print(f"{section}\n\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
