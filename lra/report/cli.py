"""``python -m lra.report``: the papers' tables and figures from every finished run; with
``--progress``, how far the sweeps are instead (``lra.report.progress``).

Reads every ``summary.json`` under ``--runs`` (default ``outputs/`` and ``multirun/``) and writes
``lra_table.md`` with its figures (PNG and SVG) into ``--out``, by default ``outputs/report/``
(git-ignored): ours per attention × task (mean ± std over seeds, runs at chance flagged), each
paper's tables beside its published figures (``lra.report.paper_layouts``; ``--paper`` picks one),
and the jobs that did not complete. ``--final`` adds the accuracy at the final weights; ``--wandb``
logs the same to W&B (``lra.report.wandb_log``); ``--wandb-workspace ENTITY/PROJECT`` saves W&B
workspace views of the runs (``lra.report.wandb_workspace``). ``--since``, ``--match`` and
``--exclude-failed`` choose the runs, for the report and ``--progress`` alike (``lra.report.selection``);
The locality figure and table (``lra.report.locality``) come with any ``window`` runs.
``--compare A B`` prints the paired difference of two variants per task instead (``lra.report.compare``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from lra.config.paths import writable_folder
from lra.provenance import rerun_command
from lra.report.compare import compare_lines
from lra.report.configurations import label_configurations
from lra.report.curves import read_curves
from lra.report.document import ACCURACY_VS_TIME, LOCALITY, build_report, split_by_protocol
from lra.report.paper_layouts import PAPERS, FigureSpec, ReportInput
from lra.report.progress import progress_table, with_killed
from lra.report.recall import RECALL_VS_STATE, apart
from lra.report.runs import SCHEMAS, Run, find_runs, latest_per_seed
from lra.report.selection import Selection, add_selection_arguments
from lra.report.studies import studies_section
from lra.report.wandb_workspace import write_workspaces
from lra.results.plotting import save_figure

DEFAULT_RUNS = (Path("outputs"), Path("multirun"))
DEFAULT_OUT = Path("outputs") / "report"
REPORT_FILE = "lra_table.md"
# What --help prints, for users.
DESCRIPTION = f"""\
The tables and figures of your finished runs, beside the published numbers of the LRA, Nystromformer
and Skyformer papers. Reads every summary.json under --runs and writes {REPORT_FILE} with its figures
(PNG and SVG) into --out. With window runs (experiment=locality) it adds accuracy against window and
each task's locality length; with recall runs (task=mqar, experiment=zoology, mad, diagnostics_cpu)
Zoology's recall-against-state figure, the MQAR table with each configuration's best rate, and MAD's
scores. With --progress it prints how far the sweeps are instead."""
EPILOG = """\
examples:
  python -m lra.report --runs multirun --final     the report of every sweep, final weights included
  python -m lra.report --progress --runs multirun  jobs completed, running, interrupted, killed, failed

docs/report.md says what each table and figure shows."""


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m lra.report",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--runs", nargs="+", type=Path, default=None, help="run folders (default: outputs multirun)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"folder of the report and its figures (default: {DEFAULT_OUT})",
    )
    parser.add_argument("--paper", choices=sorted(PAPERS), help="only this paper's artefacts (default: all)")
    parser.add_argument("--final", action="store_true", help="also the test accuracy at the final weights")
    parser.add_argument(
        "--wandb", action="store_true", help="also log the tables and figures to W&B (offline by default)"
    )
    parser.add_argument(
        "--wandb-workspace",
        metavar="ENTITY/PROJECT",
        help="also save W&B workspace views of the runs in that project",
    )
    parser.add_argument(
        "--progress",
        action="store_true",
        help="print the jobs completed, running, interrupted, killed, failed per task x attention; stop",
    )
    parser.add_argument(
        "--compare",
        nargs=2,
        metavar=("A", "B"),
        help="print A's test accuracy minus B's per task over their shared seeds (95%% interval), and stop",
    )
    add_selection_arguments(parser)
    args = parser.parse_args(argv)
    missing = [str(root) for root in args.runs or () if not root.is_dir()]
    if missing:
        parser.error(f"--runs folder(s) not found: {', '.join(missing)}")
    return args


def other_schemas_line(runs: Sequence[Run]) -> str | None:
    """One line on the summary.json files of a schema this report does not read, or None."""
    skipped = [run for run in runs if run.status == "unreadable" and "schema" in run.error]
    if not skipped:
        return None
    return (
        f"skipped {len(skipped)} summary.json file(s) of another schema (this report reads "
        f"{', '.join(map(str, SCHEMAS))}), e.g. {skipped[0].path}"
    )


def write_figures(specs: Sequence[FigureSpec], report: ReportInput, out: Path) -> set[str]:
    """Draw and save each figure that has something to draw; the stems written."""
    written = set()
    for spec in specs:
        figure = spec.draw(report)
        if figure is not None:
            save_figure(figure, out / f"{spec.stem}.png")
            written.add(spec.stem)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse(argv)
    roots = args.runs or [root for root in DEFAULT_RUNS if root.is_dir()]
    selection = Selection.from_args(args)
    if args.progress:
        print(progress_table(roots or DEFAULT_RUNS, selection=selection))
        return 0
    found = with_killed(find_runs(roots), roots)
    chosen_runs = [r for r in found if selection.picks([r.path.parent], r.status, r.started)]
    runs = split_by_protocol(label_configurations(chosen_runs))
    if args.compare:
        print("\n".join(compare_lines(runs, *args.compare)))
        return 0
    if not runs:
        searched = ", ".join(str(root) for root in (args.runs or DEFAULT_RUNS))
        if found:
            raise FileNotFoundError(
                f"none of the {len(found)} summary.json file(s) under {searched} is chosen "
                f"({selection.describe()}); loosen --since/--match"
            )
        raise FileNotFoundError(
            f"no summary.json under {searched}; train first, e.g. "
            "`python -m lra task=listops attention=nystrom`, "
            "or point --runs at the run folders"
        )
    if line := other_schemas_line(runs):
        print(line, file=sys.stderr)
    papers = [args.paper] if args.paper else list(PAPERS)
    completed = latest_per_seed(runs)
    lra, recall = apart(completed)
    report = ReportInput(lra, *read_curves(lra), recall=recall)
    specs = [spec for name in papers for spec in PAPERS[name].figures]
    specs += [ACCURACY_VS_TIME, LOCALITY, RECALL_VS_STATE]
    writable_folder(args.out, "--out")
    written = write_figures(specs, report, args.out)
    command = rerun_command("lra.report", argv)
    chosen = selection.describe() and f"{selection.describe()}: {len(found) - len(runs)} left out"
    text = build_report(runs, command, papers, args.final, written, report, chosen)
    text += "".join(f"\n{section}\n" for root in roots if (section := studies_section(root, args.out)))
    (args.out / REPORT_FILE).write_text(text)
    print(f"wrote {args.out / REPORT_FILE} and {len(written)} figure(s) (PNG and SVG) in {args.out}")
    if args.wandb:
        from lra.report.wandb_log import log_report

        figures = [args.out / f"{stem}.png" for stem in sorted(written)]
        print(log_report(text, figures, runs, command, args.out))
    if args.wandb_workspace:
        print(write_workspaces(runs, args.wandb_workspace))
    return 0
