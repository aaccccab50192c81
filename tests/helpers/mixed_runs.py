"""A realistic week of runs for the report's tests, as summary.json files with their validation curves:
the CPU demo of all ten attentions on generated ListOps, the Pathfinder demo, the Skyformer preset on
the LRA data (all five tasks, a budget sweep on ListOps), the Nyströmformer preset on Text, two
self-pretrained demo runs, and the jobs that failed on the way (typos, a warm-up past the steps, a NaN,
an interrupt). Three protocols, generated and released data, budgets 16 to 128, 53 summary files.
"""

from __future__ import annotations

from pathlib import Path

from helpers.report_summaries import masked_pretrain, write_curve, write_summary

DEFAULT = {"schedule": "warmup_linear", "clip": "norm", "clip_value": 1.0, "select_after": 0.0}
SKYFORMER = {"schedule": "one_cycle", "clip": "value", "clip_value": 1.0, "select_after": 0.2}
NYSTROMFORMER = {"schedule": "one_cycle", "clip": None, "clip_value": None, "select_after": 0.0}
BUDGETED = {"nystrom": "num_landmarks", "skyformer": "num_landmarks", "linformer": "proj_dim",
            "performer": "num_features", "informer": "num_features"}  # fmt: skip
SHARES = {"listops": 0.17, "text": 0.5, "retrieval": 0.5, "image": 0.1, "pathfinder": 0.5}
# attention -> (test accuracy, median step ms): the CPU demo's ten, close together as they come out
DEMO = {
    "standard": (0.476, 10.0), "kernelized": (0.496, 12.3), "linformer": (0.484, 9.0),
    "nystrom": (0.494, 15.6), "informer": (0.491, 15.2), "performer": (0.475, 9.4),
    "bigbird": (0.479, 17.9), "skyformer": (0.477, 19.2), "longformer": (0.474, 28.6),
    "reformer": (0.460, 60.0),
}  # fmt: skip
# attention -> task -> test accuracy under the Skyformer preset; step ms grows with the task's length
PRESET = {
    "standard": {"listops": 0.372, "text": 0.618, "retrieval": 0.79, "image": 0.402, "pathfinder": 0.66},
    "nystrom": {"listops": 0.381, "text": 0.641, "retrieval": 0.80, "image": 0.41, "pathfinder": 0.69},
    "skyformer": {"listops": 0.386, "text": 0.645, "retrieval": 0.816, "image": 0.405, "pathfinder": 0.70},
}
PRESET_STEP_MS = {"standard": 420.0, "nystrom": 95.0, "skyformer": 120.0}
TEXT_NYSTROMFORMER = {"standard": (0.64, 390.0), "nystrom": (0.652, 80.0), "linformer": (0.556, 60.0),
                      "performer": (0.505, 70.0)}  # fmt: skip
WARMUP = "ValueError: task.warmup_steps=1000 exceeds trainer.max_steps=6; the warm-up must fit in the steps"
FAILURES = (  # task, attention, seed, status, error
    ("listops", "skyformer", 0, "failed", WARMUP),
    ("listops", "nystrom", 0, "failed", WARMUP),
    ("text", "linformer", 1, "failed", "FileNotFoundError: no prepared set at data/text (data_prep text)"),
    ("image", "performer", 0, "nan", "loss is NaN at step 1250"),
    ("pathfinder", "reformer", 0, "interrupted", None),
)


def run(root: Path, task: str, attention: str, seed: int, acc: float, *, dataset: str, generated: bool,
        features: int, protocol: dict, step_ms: float, steps: int, **extra) -> Path:  # fmt: skip
    """One completed run with a validation curve of five points (the last at ``acc``)."""
    option = BUDGETED.get(attention)
    config = {
        "attention": {"name": attention, **({option: features} if option and features else {})},
        "task": {"name": task, "dataset": dataset},
        "features": features,
    }
    data = {"set": dataset, "majority_share": dict.fromkeys(("train", "val", "test"), SHARES[task])}
    data |= {"source": "generator"} if generated else {"source": f"/data/lra_release/{dataset}"}
    seconds = step_ms * steps / 1000
    metrics = {"perf/step_ms": step_ms, "perf/peak_rss_mb": 300 + 8 * step_ms, "test/acc_final": acc - 0.01}
    run_dir = write_summary(
        root, task, attention, seed, acc, schema=3, config=config, data=data, protocol=protocol,
        metrics=metrics | {"train/steps": steps}, train_time_s=seconds, **extra,
    )  # fmt: skip
    points = [(seconds * (i + 1) / 5, SHARES[task] + (acc - SHARES[task]) * (i + 1) / 5) for i in range(5)]
    write_curve(run_dir, points, pretraining=[(30.0, 0.2), (60.0, 0.3)] if "pretrain" in extra else [])
    return run_dir


def write_mixed_runs(root: Path) -> Path:
    """The week's runs under ``root``: ``root/multirun/<sweep>/<job>`` and ``root/outputs/<run>``."""
    sweeps = root / "multirun"
    demo = {"dataset": "listops-demo", "generated": True, "features": 16, "protocol": DEFAULT, "steps": 2000,
            "preset": "demo"}  # fmt: skip
    for attention, (acc, step_ms) in DEMO.items():
        run(sweeps / "demo-all", "listops", attention, 0, acc, step_ms=step_ms, **demo)
    for seed in (0, 1):
        run(sweeps / "demo-spt", "listops", "standard", seed, 0.50 + 0.01 * seed, step_ms=10.0,
            finished=f"2025-01-02T1{seed}:00:00", pretrain=masked_pretrain(time_s=60.0), **demo)  # fmt: skip
        for attention, acc in (("standard", 0.61), ("nystrom", 0.63), ("performer", 0.58)):
            run(sweeps / "pathfinder-demo", "pathfinder", attention, seed, acc + 0.01 * seed,
                dataset="pathfinder-demo", generated=True, features=16, protocol=DEFAULT, steps=600,
                step_ms=DEMO[attention][1] * 3, preset="demo_pathfinder")  # fmt: skip
    preset = {"generated": False, "protocol": SKYFORMER, "steps": 50000, "preset": "skyformer"}
    for attention, accuracies in PRESET.items():
        for task, acc in accuracies.items():
            step_ms = PRESET_STEP_MS[attention] * (4 if task in ("text", "retrieval") else 1)
            run(sweeps / "skyformer-preset", task, attention, 0, acc, dataset=task, features=128,
                step_ms=step_ms, **preset)  # fmt: skip
    for attention in ("nystrom", "skyformer"):
        for budget in (32, 64):
            step_ms = PRESET_STEP_MS[attention] * budget / 128
            run(sweeps / f"skyformer-features={budget}", "listops", attention, 0, 0.36 + budget / 3200,
                dataset="listops", features=budget, step_ms=step_ms, **preset)  # fmt: skip
    text = {"dataset": "text", "generated": False, "features": None, "protocol": NYSTROMFORMER,
            "preset": "nystromformer"}  # fmt: skip
    for attention, (acc, step_ms) in TEXT_NYSTROMFORMER.items():
        for seed in (0, 1):
            run(sweeps / "nystromformer-text", "text", attention, seed, acc + 0.02 * seed, step_ms=step_ms,
                steps=20000, **text)  # fmt: skip
    for task, attention, seed, status, error in FAILURES:
        write_summary(root / "outputs", task, attention, seed, None, status=status, error=error, schema=3,
                      protocol=SKYFORMER, preset="skyformer", finished="2025-01-03T09:00:00")  # fmt: skip
    return root


RUN_COUNT = len(DEMO) + 2 + 6 + 15 + 4 + 8 + len(FAILURES)  # the summary.json files written
