"""How each prepared set is built: the one place that says it.

A *recipe* is what a task's ``dataset`` names (``listops``, ``text``, ...): the builds that make
it, in order of preference. A build is a ``python -m data_prep`` command and the prepared set it
writes; one that reads a source under the data root (the unpacked LRA release) applies only when
that source is there. From the recipes come what the harness builds by itself when a task's set is
missing (``ensure_prepared``: the LRA release when it is unpacked, else the built-in generator for
ListOps and Pathfinder), and the commands that the error of a missing set names (``how_to_prepare``:
Text, Image, Retrieval without the release). ``{root}`` in a command stands for the data root; the
command that rebuilds an existing set is in its meta.json (``data_prep.commands.rebuild_command``).
"""

from __future__ import annotations

import logging
import shlex
from dataclasses import dataclass
from pathlib import Path

from data_prep.storage import META_FILE, DataNotPreparedError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Build:
    """``python -m data_prep ARGV --root ROOT`` writes the prepared set ``name``; ``source`` is the path
    under the data root that it reads (None for a generator or a download)."""

    name: str
    argv: tuple[str, ...]
    source: str | None = None

    def arguments(self, root: Path) -> list[str]:
        return [part.replace("{root}", str(root)) for part in self.argv] + ["--root", str(root)]

    def command(self, root: Path) -> str:
        return shlex.join(["python", "-m", "data_prep", *self.arguments(root)])

    def applies(self, root: Path) -> bool:
        return self.source is None or (root / self.source).exists()


@dataclass(frozen=True)
class Recipe:
    """``builds``: what the harness may run by itself, in order of preference. ``steps``: what a user
    runs, in order, when no build applies (default: the builds, as alternatives); ``note`` adds a word."""

    builds: tuple[Build, ...]
    steps: tuple[Build, ...] = ()
    note: str = ""

    def set_names(self) -> list[str]:
        """The prepared sets that serve this recipe, in order of preference."""
        return list(dict.fromkeys(build.name for build in self.builds or self.steps[-1:]))


RELEASE = "lra_release"
FROM_RELEASE = ("--source", f"{{root}}/{RELEASE}")
DEMO_LISTOPS = (
    "--num-train", "20000", "--num-val", "1000", "--num-test", "1000", "--min-length", "9",
    "--max-length", "65", "--max-depth", "3", "--max-args", "5", "--seq-len", "64",
)  # fmt: skip
PATHX = ("--resolution", "128", "--name", "pathx")
PATHX_FOLDERS = tuple(
    f"{prefix}/pathfinder128/curv_contour_length_14" for prefix in (RELEASE, f"{RELEASE}/{RELEASE}")
)
DOWNLOAD_NOTE = "or --download instead of --source: the official archive, MD5-checked"

RECIPES: dict[str, Recipe] = {
    "listops": Recipe(
        (
            Build("listops", ("listops", *FROM_RELEASE), source=RELEASE),
            Build("listops-generated", ("listops", "--name", "listops-generated")),
        )
    ),
    # The README's CPU demo: short, shallow ListOps trees (10..64 tokens) from the generator.
    "listops-demo": Recipe((Build("listops-demo", ("listops", "--name", "listops-demo", *DEMO_LISTOPS)),)),
    "text": Recipe((), (Build("text", ("text", "--source", "PATH/TO/aclImdb")),), DOWNLOAD_NOTE),
    "retrieval": Recipe(
        (Build("retrieval", ("retrieval", *FROM_RELEASE), source=RELEASE),),
        (
            Build(RELEASE, ("lra-release", "--download")),
            Build("retrieval", ("retrieval", *FROM_RELEASE)),
        ),
        "the LRA release is several GB; the download resumes after an interruption",
    ),
    "image": Recipe(
        (), (Build("image", ("image", "--source", "PATH/TO/cifar-10-python.tar.gz")),), DOWNLOAD_NOTE
    ),
    # Generated sets get their own names: their images are not LRA's, so runs on them never read as
    # the papers' numbers (lra.report marks them).
    "pathfinder": Recipe(
        (
            Build("pathfinder", ("pathfinder", *FROM_RELEASE), source=RELEASE),
            Build("pathfinder-generated", ("pathfinder", "--generate", "--name", "pathfinder-generated")),
        )
    ),
    # Path-X: LRA's pathfinder128, hard, read from the release's folder at either unpacked level.
    # A CPU-sized set for experiment=demo_pathfinder: 20k easy 32×32 images from the generator.
    "pathfinder-demo": Recipe(
        (
            Build(
                "pathfinder-demo",
                (
                    "pathfinder",
                    "--generate",
                    "--num",
                    "20000",
                    "--difficulty",
                    "easy",
                    "--name",
                    "pathfinder-demo",
                ),
            ),
        )
    ),
    "pathx": Recipe(
        (
            *(
                Build("pathx", ("pathfinder", "--source", f"{{root}}/{folder}", *PATHX), source=folder)
                for folder in PATHX_FOLDERS
            ),
            Build(
                "pathx-generated",
                ("pathfinder", "--generate", "--resolution", "128", "--name", "pathx-generated"),
            ),
        )
    ),
}


def recipe_for(dataset: str) -> Recipe:
    """The recipe of ``dataset``. A set without one (``pathfinder-easy``) is made by hand: its task's
    command with ``--name`` and the options that make it."""
    if dataset in RECIPES:
        return RECIPES[dataset]
    task = dataset.split("-", 1)[0]
    return Recipe((), (Build(dataset, (task, "--name", dataset)),), f"see python -m data_prep {task} --help")


def how_to_prepare(dataset: str, root: Path | str) -> str:
    """The command(s) that prepare ``dataset`` under ``root``, for an error message."""
    recipe, root = recipe_for(dataset), Path(root)
    if recipe.steps:
        text = ", then ".join(step.command(root) for step in recipe.steps)
    else:
        text = " or ".join(build.command(root) for build in recipe.builds)
    return text + (f" ({recipe.note})" if recipe.note else "")


def is_prepared(name: str, root: Path) -> bool:
    return (root / name / META_FILE).is_file()


def resolve(dataset: str, root: Path | str) -> str:
    """The name of the prepared set that ``dataset`` uses under ``root``: the first build (in order of
    preference) whose set exists; ``DataNotPreparedError`` naming the commands when none does."""
    root = Path(root)
    for name in recipe_for(dataset).set_names():
        if is_prepared(name, root):
            return name
    raise DataNotPreparedError(
        f"no prepared data set {dataset!r} under {root.resolve()}. "
        f"Prepare it with: {how_to_prepare(dataset, root)}"
    )


def note_new_root(root: Path) -> None:
    """Say, in one line, that the data root ``root`` does not exist and a build is creating it: a
    misspelt ``data_root`` does not pass for a new tree unnoticed."""
    if not root.exists():
        log.warning(
            "data root %s does not exist: creating it (data_root=PATH or $LRA_DATA sets another)", root
        )


def ensure_prepared(dataset: str, root: Path | str) -> str:
    """Build ``dataset`` under ``root`` if it is missing and a build applies; returns the set's name.

    Builds are tried in order of preference: a set that exists is used, else the first build
    whose source is there runs (a release unpacked after a generated set was made wins, since it
    comes first). None applicable: ``DataNotPreparedError`` naming the commands to run.
    """
    from data_prep.commands import main as data_prep_main

    root = Path(root)
    for build in recipe_for(dataset).builds:
        if is_prepared(build.name, root):
            return build.name
        if build.applies(root):
            log.info(
                "Prepared set %r not found under %s: building it with `%s`",
                build.name,
                root,
                build.command(root),
            )
            note_new_root(root)
            if data_prep_main(build.arguments(root)) != 0:
                raise DataNotPreparedError(f"`{build.command(root)}` failed (see its message above)")
            return build.name
    return resolve(dataset, root)
