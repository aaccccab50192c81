"""Fixtures of the harness tests: tiny prepared data sets for every task, and Hydra composition.

The sets are written with ``data_prep.PreparedWriter`` in the real prepared format: short
sequences (``TINY_SEQ_LEN``), a few dozen examples per split, retrieval with two documents.
"""

from __future__ import annotations

import copy
import fcntl
import functools
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.source_samples import SOURCES, real_sample, write_cifar_archive, write_imdb, write_listops_2018
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

import lra  # noqa: F401  (registers the lra.* resolvers)
from data_prep import PreparedWriter

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"
TASKS = ("listops", "text", "retrieval", "image", "pathfinder")
TINY_SEQ_LEN = 32
TINY_COUNTS = {"train": 40, "val": 16, "test": 16}
# Per task: vocabulary, classes, documents per example, whether every position is a real token (pixels).
TASK_SHAPES = {
    "listops": (16, 10, 1, False),
    "text": (257, 2, 1, False),
    "retrieval": (257, 2, 2, False),
    "image": (256, 10, 1, True),
    "pathfinder": (256, 2, 1, True),
}
EASY_SEQ_LEN = 32
EASY_VOCAB = 5


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``cuda`` skip, with the reason, where no CUDA GPU is present."""
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (none is present)")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


def task_attention_product(tasks: tuple[str, ...] | list[str], attentions: list[str]) -> list:
    """Every (task, attention) pair as pytest params. The quick suite keeps one pair per attention,
    its task taken in turn, so every row and column of the product runs there; the other pairs are
    marked ``slow`` and run in the whole suite."""
    return [
        pytest.param(task, attention, marks=() if tasks[i % len(tasks)] == task else pytest.mark.slow)
        for task in tasks
        for i, attention in enumerate(attentions)
    ]


# The tests run tiny tensors on a small shared machine, where one intra-op thread does better than
# threads contending for every core; no test asserts a speed.
torch.set_num_threads(1)


def write_random_set(root: Path, task: str, seed: int) -> None:
    """A tiny set with random tokens, lengths and labels, shaped like ``task``'s real one."""
    vocab, classes, docs, full = TASK_SHAPES[task]
    rng = np.random.default_rng(seed)
    meta = {
        "task": task,
        "vocab_size": vocab,
        "num_classes": classes,
        "seq_len": TINY_SEQ_LEN,
        "source": "random tokens (tests)",
        "command": "tests/conftest.py",
        "seed": seed,
    }
    token_shape = (TINY_SEQ_LEN,) if docs == 1 else (docs, TINY_SEQ_LEN)
    with PreparedWriter(root, task, meta) as writer:
        for split, count in TINY_COUNTS.items():
            arrays = writer.create_split(split, count, token_shape, vocab)
            low = 0 if full else 1
            lengths = (
                np.full((count, docs), TINY_SEQ_LEN)
                if full
                else rng.integers(1, TINY_SEQ_LEN + 1, (count, docs))
            )
            tokens = rng.integers(low, vocab, (count, docs, TINY_SEQ_LEN))
            tokens[np.arange(TINY_SEQ_LEN)[None, None, :] >= lengths[..., None]] = 0
            arrays.tokens[:] = tokens.reshape(count, *token_shape)
            arrays.lengths[:] = lengths.reshape(arrays.lengths.shape)
            arrays.labels[:] = rng.integers(0, classes, count)


def write_easy_set(root: Path, name: str = "easy", seed: int = 0) -> None:
    """A learnable 2-class task: label 1 when token 1 occurs more often than token 2 (no ties).

    Tokens 1..4, lengths 8..EASY_SEQ_LEN; classes are balanced up to sampling noise.
    """
    rng = np.random.default_rng(seed)
    counts = {"train": 2000, "val": 200, "test": 200}
    meta = {
        "task": "listops",
        "vocab_size": EASY_VOCAB,
        "num_classes": 2,
        "seq_len": EASY_SEQ_LEN,
        "source": "count comparison (tests)",
        "command": "tests/conftest.py",
        "seed": seed,
    }
    with PreparedWriter(root, name, meta) as writer:
        for split, count in counts.items():
            arrays = writer.create_split(split, count, (EASY_SEQ_LEN,), EASY_VOCAB)
            filled = 0
            while filled < count:
                length = int(rng.integers(8, EASY_SEQ_LEN + 1))
                sequence = rng.integers(1, EASY_VOCAB, length)
                ones, twos = int((sequence == 1).sum()), int((sequence == 2).sum())
                if ones == twos:
                    continue
                arrays.tokens[filled, :length] = sequence
                arrays.lengths[filled] = length
                arrays.labels[filled] = int(ones > twos)
                filled += 1


@pytest.fixture(scope="session")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data root with a tiny prepared set for each of the five tasks and the ``easy`` set."""
    root = tmp_path_factory.mktemp("lra_data")
    for seed, task in enumerate(TASKS):
        write_random_set(root, task, seed)
    write_easy_set(root)
    return root


@pytest.fixture(scope="session")
def uninterrupted(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run folder of ``test_resume.short_run`` left alone from start to end (CSV logger): what every
    stopped and resumed run of that config must end as, shared by the tests that stop one."""
    from test_resume import lra as python_m_lra
    from test_resume import run_folders, short_run

    cwd = tmp_path_factory.mktemp("uninterrupted")
    result = python_m_lra(short_run(data_root, "logger=csv"), cwd)
    assert result.returncode == 0, result.stderr[-3000:]
    (run_dir,) = run_folders(cwd)
    return run_dir


@pytest.fixture
def one_ddp_run_at_a_time(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Waits until no other worker of this test session runs DDP, then holds the turn for the test.

    Lightning takes a DDP run's port by binding a free one and closing it, so two runs at once could
    take the same port. The lock file is in the session's temporary folder: under pytest-xdist, each
    worker's folder is inside it.
    """
    session = tmp_path_factory.getbasetemp()
    if "PYTEST_XDIST_WORKER" in os.environ:
        session = session.parent
    with open(session / "ddp.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield


# Each reader test runs on source files that the tests write in the exact format and, where
# ../shared/fixtures is beside the checkout, again on the real public samples there.


@pytest.fixture(params=SOURCES)
def imdb_folder(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An ``aclImdb`` folder: 3 reviews per class and split, non-ASCII ones and ones over 4000 bytes."""
    if request.param == "real sample":
        return real_sample("aclImdb")
    return write_imdb(tmp_path_factory.mktemp("imdb"))


@pytest.fixture(params=SOURCES)
def cifar_archive(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``cifar-10-python.tar.gz``: 12 images per training batch, 40 test images starting 3, 8, 8, 0, 6."""
    if request.param == "real sample":
        return real_sample("cifar-10-python.tar.gz")
    return write_cifar_archive(tmp_path_factory.mktemp("cifar") / "cifar-10-python.tar.gz")


@pytest.fixture(params=SOURCES)
def listops_2018_file(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The head of a 2018 ListOps TSV (``Target<TAB>Source``): 40 rows."""
    if request.param == "real sample":
        return real_sample("listops2018_test_head.tsv")
    return write_listops_2018(tmp_path_factory.mktemp("listops") / "test_d20s_head.tsv")


@functools.cache
def composed_once(overrides: tuple[str, ...], search_path: tuple[str, ...]) -> DictConfig:
    """The composed config of ``overrides``; ``search_path`` (``sys.path``) keys the cache, since a
    plugin on it adds config folders."""
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


def compose_config(overrides: list[str]) -> DictConfig:
    """The job config of ``python -m lra OVERRIDES``, through Hydra's compose API.

    Each command line is composed once per test process; every call gets its own copy to change.
    """
    return copy.deepcopy(composed_once(tuple(overrides), tuple(sys.path)))


def tiny_data_overrides(data_root: Path, *extra: str) -> list[str]:
    """A fast dev run (``debug=fdr``) on the tiny prepared sets of ``data_root``."""
    return ["debug=fdr", f"data_root={data_root}", f"task.seq_len={TINY_SEQ_LEN}", *extra]


def smoke_overrides(data_root: Path, task: str, attention: str, *extra: str) -> list[str]:
    """``task`` × ``attention`` as a fast dev run on the tiny data."""
    return [f"task={task}", f"attention={attention}", *tiny_data_overrides(data_root, *extra)]
