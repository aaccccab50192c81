"""Recipes: which prepared set a task's dataset uses, what the harness builds by itself, what it asks for."""

from __future__ import annotations

from pathlib import Path

import pytest

import data_prep
from data_prep.recipes import RECIPES, Build, Recipe

TINY = ("--num-train", "20", "--num-val", "4", "--num-test", "4", "--min-length", "5", "--max-length", "33")


def write_release(root: Path) -> None:
    """An unpacked LRA release holding ListOps-1000 in its exact format (header Source\tTarget)."""
    folder = root / "lra_release" / "lra_release" / "listops-1000"
    folder.mkdir(parents=True)
    for split in ("train", "val", "test"):
        rows = "".join(f"( [MAX {d} {9 - d} ] )\t{max(d, 9 - d)}\n" for d in range(6))
        (folder / f"basic_{split}.tsv").write_text("Source\tTarget\n" + rows)


@pytest.fixture
def listops_recipe(monkeypatch) -> str:
    """The shape of the real ``listops`` recipe (the release first, else the generator), at tiny sizes."""
    recipe = Recipe(
        (
            Build(
                "tiny", ("listops", "--name", "tiny", "--source", "{root}/lra_release"), source="lra_release"
            ),
            Build("tiny-generated", ("listops", "--name", "tiny-generated", *TINY)),
        )
    )
    monkeypatch.setitem(RECIPES, "tiny", recipe)
    return "tiny"


def test_the_generator_builds_a_missing_set_and_an_unpacked_release_is_preferred(tmp_path, listops_recipe):
    with pytest.raises(data_prep.DataNotPreparedError):
        data_prep.resolve(listops_recipe, tmp_path)
    assert data_prep.ensure_prepared(listops_recipe, tmp_path) == "tiny-generated"
    assert data_prep.resolve(listops_recipe, tmp_path) == "tiny-generated"
    assert data_prep.PreparedSet("tiny-generated", tmp_path).meta["source"] == "generator"
    write_release(tmp_path)  # unpacked later: it wins over the generated set
    assert data_prep.ensure_prepared(listops_recipe, tmp_path) == "tiny"
    assert data_prep.resolve(listops_recipe, tmp_path) == "tiny"
    assert data_prep.PreparedSet("tiny", tmp_path).counts == {"train": 6, "val": 6, "test": 6}


def test_a_set_that_needs_a_download_names_its_commands(tmp_path):
    with pytest.raises(data_prep.DataNotPreparedError) as error:
        data_prep.ensure_prepared("text", tmp_path)
    message = str(error.value)
    assert f"python -m data_prep text --source PATH/TO/aclImdb --root {tmp_path}" in message
    assert "--download" in message
    with pytest.raises(data_prep.DataNotPreparedError) as error:
        data_prep.ensure_prepared("retrieval", tmp_path)
    assert f"python -m data_prep lra-release --download --root {tmp_path}, then " in str(error.value)


def test_retrieval_is_built_from_an_unpacked_release(tmp_path):
    folder = tmp_path / "lra_release" / "tsv_data"
    folder.mkdir(parents=True)
    for split in ("train", "eval", "test"):
        (folder / f"new_aan_pairs.{split}.tsv").write_text("1\ta\tb\tfirst text\tsecond\n0\tc\td\tx\ty\n")
    assert data_prep.ensure_prepared("retrieval", tmp_path) == "retrieval"
    assert data_prep.PreparedSet("retrieval", tmp_path).dual


def test_every_recipe_names_real_commands():
    parser_commands = {"listops", "text", "retrieval", "image", "pathfinder", "lra-release"}
    for name, recipe in RECIPES.items():
        assert recipe.set_names(), name
        for build in (*recipe.builds, *recipe.steps):
            assert build.argv[0] in parser_commands, (name, build)
