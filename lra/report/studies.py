"""The report's section on hyperparameter searches: one subsection per Optuna study (``hparams_search=lra``).

Each study found in an ``optuna.db`` under the runs folder (or in a given storage) gets its best
val/acc_best and parameters, its trials completed / failed / interrupted / running, and two plots from
Optuna's own matplotlib visualisation: the optimisation history and the parameter importances (mean
decrease in impurity of a random forest over the completed trials)::

    python -m lra.report.studies --runs multirun [--out outputs/report/studies] [--storage postgresql://...]
"""

from __future__ import annotations

import argparse
import re
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from unittest import mock

from lra.plotting import agg_pyplot, save_figure
from lra.provenance import markdown_table, rerun_command
from lra.search.study import STUDY_FILE, trial_counts

OBJECTIVE = "val/acc_best"
IMPORTANCE_SEED = 0


def sqlite_storages(root: Path) -> list[str]:
    """The SQLAlchemy URL of every ``optuna.db`` under ``root``, in path order."""
    return [f"sqlite:///{path}" for path in sorted(root.rglob(STUDY_FILE))]


def file_stem(study_name: str) -> str:
    """A study name as a file name (``/`` and other odd characters to ``_``)."""
    return re.sub(r"[^A-Za-z0-9=._-]", "_", study_name)


def save_plot(ax: Any, path: Path, title: str) -> Path:
    figure = ax.get_figure()
    ax.set_title(title, fontsize=9)
    figure.set_size_inches(7, 4)
    figure.tight_layout()
    (written,) = save_figure(figure, path, formats=(".png",))
    return written


def study_plots(study: Any, out_dir: Path) -> dict[str, Path]:
    """Optuna's optimisation-history and parameter-importance plots of ``study`` as PNGs in ``out_dir``;
    the importance plot only with 2 or more completed trials."""
    import matplotlib

    agg_pyplot()
    import optuna
    from optuna.visualization import matplotlib as optuna_plots

    out_dir.mkdir(parents=True, exist_ok=True)
    stem = file_stem(study.study_name)
    plots: dict[str, Path] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        history = optuna_plots.plot_optimization_history(study, target_name=OBJECTIVE)
        plots["optimisation history"] = save_plot(
            history, out_dir / f"{stem}-history.png", f"{study.study_name}\noptimisation history"
        )
        completed = trial_counts(study.get_trials(deepcopy=False))["completed"]
        if completed >= 2:
            evaluator = optuna.importance.MeanDecreaseImpurityImportanceEvaluator(seed=IMPORTANCE_SEED)
            # Optuna 2.10's importance plot calls matplotlib.cm.get_cmap, which matplotlib 3.11 no longer has.
            with mock.patch("matplotlib.cm.get_cmap", matplotlib.colormaps.get_cmap, create=True):
                importance = optuna_plots.plot_param_importances(
                    study, evaluator=evaluator, target_name=OBJECTIVE
                )
            plots["parameter importance"] = save_plot(
                importance,
                out_dir / f"{stem}-importance.png",
                f"{study.study_name}\nparameter importance (mean decrease in impurity, {completed} trials)",
            )
    return plots


def format_param(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def study_markdown(study: Any, storage: str, plots: dict[str, Path], out_dir: Path) -> str:
    counts = trial_counts(study.get_trials(deepcopy=False))
    lines = [
        f"### Study `{study.study_name}`",
        "",
        f"Storage `{storage}`; trials: {counts['completed']} completed, {counts['failed']} failed, "
        f"{counts['interrupted']} interrupted, {counts['running']} running.",
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
    """The markdown section on every study in ``storages`` and in the ``optuna.db`` files under ``root``;
    the plots are written to ``out_dir``. An empty string when there is no study."""
    all_storages = [*storages, *sqlite_storages(root)]
    if not all_storages:  # no search: Optuna (the `search` extra) is not needed
        return ""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    parts = []
    for storage in all_storages:
        for summary in optuna.get_all_study_summaries(storage):
            study = optuna.load_study(study_name=summary.study_name, storage=storage)
            parts.append(study_markdown(study, storage, study_plots(study, out_dir), out_dir))
    if not parts:
        return ""
    return "\n\n".join(["## Hyperparameter searches", *parts])


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    description = __doc__.split("\n\n")[0]
    parser = argparse.ArgumentParser(prog="python -m lra.report.studies", description=description)
    parser.add_argument("--runs", type=Path, default=Path("multirun"), help="folder searched for optuna.db")
    parser.add_argument(
        "--out", type=Path, default=Path("outputs/report/studies"), help="where studies.md and its plots go"
    )
    parser.add_argument(
        "--storage", action="append", default=[], help="another study storage (SQLAlchemy URL)"
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
