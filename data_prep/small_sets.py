"""The small sets of a fast dev run (``debug=fdr``): a few hundred examples when a task's set is missing.

A fast dev run checks that a task × attention runs end to end; it never waits for a full set. When no
prepared set of the task's recipe exists under the data root, ``ensure_small`` builds one of ``size``
training examples (and an eighth of that each for val and test) under a name that says what it is:

- ``{dataset}-debug{size}-generated``: the recipe's built-in generator with small counts, for the
  recipes in ``SMALL_COUNTS`` (ListOps, Pathfinder 32×32);
- ``{dataset}-debug{size}-random``: random tokens and labels of the task's shape (``python -m data_prep
  random-stand-in``), for every other recipe (Text, Retrieval, Image need downloads; Path-X draws
  16 times Pathfinder's pixels per image). Its meta.json says ``source: random stand-in``: the numbers
  of a run on it mean nothing, and the report says so.

A full prepared set, when there is one, is always used instead; a run without ``debug=fdr`` never
reads a small set (``data_prep.resolve`` does not know their names).
"""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from data_prep.commands import command, rebuild_command
from data_prep.commands import main as data_prep_main
from data_prep.recipes import Build, is_prepared, note_new_root, recipe_for, resolve
from data_prep.storage import SPLITS, DataNotPreparedError, PreparedWriter

STAND_IN_SOURCE = "random stand-in"  # meta.json's source of a random set: not the task's data
HELD_OUT_SHARE = 8  # val and test each hold size // 8 examples


def listops_counts(size: int) -> tuple[str, ...]:
    held_out = str(max(1, size // HELD_OUT_SHARE))
    return ("--num-train", str(size), "--num-val", held_out, "--num-test", held_out)


def pathfinder_counts(size: int) -> tuple[str, ...]:
    return ("--num", str(size + 2 * max(1, size // HELD_OUT_SHARE)))  # its 80/10/10 split


# Recipes whose generator makes a small set in seconds -> the options that set its counts (the
# generator's argv with these appended: argparse keeps an option's last value).
SMALL_COUNTS: dict[str, Callable[[int], tuple[str, ...]]] = {
    "listops": listops_counts,
    "listops-demo": listops_counts,
    "pathfinder": pathfinder_counts,
    "pathfinder-demo": pathfinder_counts,
}


@dataclass(frozen=True)
class SetShape:
    """What the model is built for: a random stand-in is drawn to fit it."""

    seq_len: int
    vocab_size: int
    num_classes: int
    dual: bool = False


def small_build(dataset: str, size: int, shape: SetShape) -> Build:
    """The build of ``dataset``'s small set of ``size`` training examples (module docstring)."""
    generators = [build for build in recipe_for(dataset).builds if build.source is None]
    if dataset in SMALL_COUNTS and generators:
        name, argv = f"{dataset}-debug{size}-generated", generators[0].argv
        if "--name" in argv:  # the full set's name gives way to the small set's
            at = argv.index("--name")
            argv = argv[:at] + argv[at + 2 :]
        return Build(name, (*argv, *SMALL_COUNTS[dataset](size), "--name", name))
    name = f"{dataset}-debug{size}-random"
    argv = ("random-stand-in", "--name", name, "--task", dataset.split("-", 1)[0], "--num", str(size))
    argv += ("--seq-len", str(shape.seq_len), "--vocab-size", str(shape.vocab_size))
    argv += ("--num-classes", str(shape.num_classes)) + (("--dual",) if shape.dual else ())
    return Build(name, argv)


def small_set_names(dataset: str, size: int) -> list[str]:
    """The names a small set of ``dataset`` may have, generated first."""
    return [f"{dataset}-debug{size}-{kind}" for kind in ("generated", "random")]


def resolve_small(dataset: str, root: Path | str, size: int) -> str:
    """``data_prep.resolve``'s set when one is prepared, else ``dataset``'s small set of ``size``;
    ``DataNotPreparedError`` when neither is."""
    try:
        return resolve(dataset, root)
    except DataNotPreparedError:
        for name in small_set_names(dataset, size):
            if is_prepared(name, Path(root)):
                return name
        raise


def ensure_small(dataset: str, root: Path | str, size: int, shape: SetShape, log: logging.Logger) -> str:
    """The prepared set of ``dataset`` under ``root`` if there is one, else its small set of ``size``
    training examples, built first if missing (one line on ``log`` says so)."""
    root = Path(root)
    try:
        return resolve_small(dataset, root, size)
    except DataNotPreparedError:
        pass
    build = small_build(dataset, size, shape)
    note_new_root(root)
    log.warning(
        "debug: no prepared %r under %s: building %s with `%s`",
        dataset,
        root,
        build.name,
        build.command(root),
    )
    if data_prep_main(build.arguments(root)) != 0:
        raise DataNotPreparedError(f"`{build.command(root)}` failed (see its message above)")
    return build.name


def small_set_line(meta: dict, dataset: str) -> str | None:
    """The console's line for a run on a small set (its meta.json ``meta``), None for any other set."""
    name, size = meta.get("name", ""), meta.get("counts", {}).get("train")
    if meta.get("source") == STAND_IN_SOURCE:
        return f"debug: training on {name}, {size} examples of random tokens: not the {dataset} data"
    if name in small_set_names(dataset, size):
        return f"debug: training on {name}, {size} generated examples: not the full {dataset} set"
    return None


def write_random(args: argparse.Namespace) -> None:
    """Write the random stand-in the options of ``random-stand-in`` describe (seeded by ``--seed``)."""
    started = time.time()
    if min(args.num, args.seq_len, args.num_classes) < 1 or args.vocab_size < 2:
        raise ValueError("--num, --seq-len and --num-classes must be >= 1 and --vocab-size >= 2")
    meta = {
        "task": args.task,
        "vocab_size": args.vocab_size,
        "num_classes": args.num_classes,
        "seq_len": args.seq_len,
        "source": STAND_IN_SOURCE,
        "note": "uniform random tokens and labels: a stand-in that runs the pipeline, not the task's data",
        "seed": args.seed,
        "command": rebuild_command(
            "random-stand-in",
            args,
            ["name", "task", "num", "seq_len", "vocab_size", "num_classes", "dual", "seed"],
        ),
    }
    rng = np.random.default_rng(args.seed)
    sizes = dict(zip(SPLITS, (args.num, *[max(1, args.num // HELD_OUT_SHARE)] * 2), strict=True))
    documents = (2,) if args.dual else ()
    with PreparedWriter(args.root, args.name, meta) as writer:
        for split, count in sizes.items():
            arrays = writer.create_split(split, count, (*documents, args.seq_len), args.vocab_size)
            lengths = rng.integers(max(1, args.seq_len // 2), args.seq_len + 1, size=(count, *documents))
            tokens = rng.integers(1, args.vocab_size, size=arrays.tokens.shape)
            tokens[np.arange(args.seq_len) >= lengths[..., None]] = 0  # padding after each length
            arrays.tokens[:] = tokens
            arrays.lengths[:] = lengths
            arrays.labels[:] = rng.integers(0, args.num_classes, size=count)
    writer.report(f"{STAND_IN_SOURCE}, seq_len {args.seq_len}, vocab {args.vocab_size}", started)


@command("random-stand-in", help="random tokens and labels of a task's shape: debug=fdr's stand-in set")
def configure(parser: argparse.ArgumentParser):
    parser.add_argument("--name", required=True, help="folder name of the set")
    parser.add_argument("--task", required=True, help="the task it stands in for (meta.json's task)")
    parser.add_argument("--num", type=int, default=512, help="training examples (val, test: num // 8)")
    parser.add_argument("--seq-len", type=int, required=True)
    parser.add_argument("--vocab-size", type=int, required=True, help="token ids 1..vocab-size-1; 0 pads")
    parser.add_argument("--num-classes", type=int, required=True)
    parser.add_argument("--dual", action="store_true", help="two documents per example (retrieval)")
    parser.add_argument("--seed", type=int, default=0)
    return write_random
