"""The report's figures."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lra.report.published import TASKS
from lra.report.runs import Run, metric_cells


def write_plot(path: Path, runs: Sequence[Run]) -> None:
    """Test accuracy (%) against whole-fit wall time (s), one panel per task, one series per attention."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    accuracy = metric_cells(runs, "test/acc", scale=100.0)
    seconds = metric_cells(runs, "perf/train_time_s")
    tasks = [t for t in TASKS if any(t in cells for cells in accuracy.values())] or list(TASKS)
    colors = {
        variant: f"C{i}" for i, variant in enumerate(sorted(accuracy))
    }  # the same colour in every panel
    fig, axes = plt.subplots(1, len(tasks), figsize=(3.6 * len(tasks), 3.6), squeeze=False)
    for task, ax in zip(tasks, axes[0], strict=True):
        for variant in sorted(accuracy):
            acc, time_s = accuracy[variant].get(task), seconds.get(variant, {}).get(task)
            if acc is not None and time_s is not None:
                ax.errorbar(
                    time_s.mean, acc.mean, xerr=time_s.std, yerr=acc.std, marker="o", capsize=3,
                    color=colors[variant], label=variant,
                )  # fmt: skip
        ax.set(xlabel="train time (s)", ylabel="test accuracy (%)", title=task)
        if ax.has_data():
            ax.set_xscale("log")
        ax.grid(True, which="both", alpha=0.3)
    legend = {
        label: handle for ax in axes[0] for handle, label in zip(*ax.get_legend_handles_labels(), strict=True)
    }
    handles, labels = list(legend.values()), list(legend)
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 4), fontsize=8)
    fig.tight_layout(rect=(0, 0.12 if handles else 0, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
