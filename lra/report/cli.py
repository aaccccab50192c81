"""The LRA table of every finished run: ``python -m lra.report [--runs DIR ...] [--out results]``;
with ``--progress``, how far the sweeps under the folders are instead (``lra.report.progress``).

Reads every ``summary.json`` under the run folders (Hydra's ``outputs/`` for single runs and
``multirun/`` for sweeps by default) and writes ``<out>/lra_table.md``: test accuracy per attention
× task as mean ± std over seeds (n seeds), the five-task average where all five are present, the
published tables beside it, a time / peak-memory table in the form of Skyformer's Table 2, the
failed / NaN / interrupted jobs apart with their errors, and ``<out>/lra_accuracy_vs_time.png``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from lra.report.document import build_report, split_by_protocol
from lra.report.figures import write_plot
from lra.report.progress import progress_table
from lra.report.provenance import rerun_command
from lra.report.runs import find_runs, latest_per_seed

DEFAULT_RUNS = (Path("outputs"), Path("multirun"))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m lra.report", description=__doc__)
    parser.add_argument(
        "--runs", nargs="+", type=Path, default=None, help="run folders (default: outputs multirun)"
    )
    parser.add_argument("--out", type=Path, default=Path("results"))
    parser.add_argument(
        "--progress",
        action="store_true",
        help="print the jobs completed, running, interrupted and failed per task x attention, and stop",
    )
    args = parser.parse_args(argv)
    missing = [str(root) for root in args.runs or () if not root.is_dir()]
    if missing:
        parser.error(f"--runs folder(s) not found: {', '.join(missing)}")
    roots = args.runs or [root for root in DEFAULT_RUNS if root.is_dir()]
    if args.progress:
        print(progress_table(roots or DEFAULT_RUNS))
        return 0
    runs = split_by_protocol(find_runs(roots))
    if not runs:
        searched = ", ".join(str(root) for root in (args.runs or DEFAULT_RUNS))
        raise FileNotFoundError(
            f"no summary.json under {searched}; train first, e.g. "
            "`python -m lra task=listops attention=nystrom`, "
            "or point --runs at the run folders"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "lra_table.md").write_text(build_report(runs, rerun_command("lra.report", argv)))
    write_plot(args.out / "lra_accuracy_vs_time.png", latest_per_seed(runs))
    print(f"wrote {args.out / 'lra_table.md'} and {args.out / 'lra_accuracy_vs_time.png'}")
    return 0
