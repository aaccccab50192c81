"""The README and the manual: every relative link points at a file that exists (and at a heading of
it, for a ``#fragment``), the README stays short with links into ``docs/``, results/README.md
names every committed result, and the facts the docs hold for the code (the resume fingerprint's
keys) are the code's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lra.config.naming import IGNORED_KEYS

REPO = Path(__file__).resolve().parents[1]
PAGES = ("README.md", "docs/*.md", "*/README.md", "results/*/README.md")
SKIPPED_FOLDERS = {".venv", "outputs", "multirun", "data", "wandb"}
LINK = re.compile(r"\]\(([^)\s]+)\)")  # the target of [text](target), ![alt](target) and nested ones
INLINE_CODE = re.compile(r"`[^`]*`")
README_MAX_LINES = 250


def pages() -> list[Path]:
    found = {path for pattern in PAGES for path in REPO.glob(pattern)}
    return sorted(
        path
        for path in found
        if not any(part in SKIPPED_FOLDERS or part.startswith(".") for part in path.relative_to(REPO).parts)
    )


def links(page: Path) -> list[str]:
    """The link targets of ``page``, outside fenced code blocks and inline code."""
    targets, fenced = [], False
    for line in page.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            targets += LINK.findall(INLINE_CODE.sub("", line))
    return targets


def anchors(page: Path) -> set[str]:
    """The ``#fragment`` of each heading of ``page``, as GitHub makes them (duplicates get ``-1``, ...)."""
    seen: dict[str, int] = {}
    result = set()
    fenced = False
    for line in page.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced or not line.startswith("#"):
            continue
        text = line.lstrip("#").strip().replace("`", "").lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        result.add(f"{slug}-{count}" if count else slug)
    return result


def broken_links(page: Path, root: Path = REPO) -> list[str]:
    """One line per link of ``page`` whose file, or heading, does not exist."""
    problems = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path, _, fragment = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            problems.append(f"{target}: no such file")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            problems.append(f"{target}: no heading #{fragment} in {resolved.relative_to(root)}")
    return problems


@pytest.mark.parametrize("page", pages(), ids=lambda path: str(path.relative_to(REPO)))
def test_every_relative_link_points_at_an_existing_file_and_heading(page: Path):
    assert broken_links(page) == []


def test_the_readme_is_short_and_links_to_the_manual():
    readme = REPO / "README.md"
    assert len(readme.read_text().splitlines()) <= README_MAX_LINES
    docs_pages = {target.partition("#")[0] for target in links(readme) if target.startswith("docs/")}
    assert len(docs_pages) >= 5 and all((REPO / page).is_file() for page in docs_pages)


def test_the_readmes_first_commands_are_those_python_m_lra_help_shows():
    readme = (REPO / "README.md").read_text()
    first_block = readme.split("```bash\n", 1)[1].split("```", 1)[0]
    shown = [line.split("#")[0].strip() for line in first_block.splitlines()]
    template = (REPO / "conf" / "hydra" / "help" / "lra.yaml").read_text()
    in_help = [line.strip() for line in template.splitlines() if line.strip().startswith("python -m ")]
    assert shown == in_help


def test_the_results_readme_names_every_committed_result():
    listed = (REPO / "results" / "README.md").read_text()
    names = [path.name for path in (REPO / "results").iterdir() if path.name != "README.md"]
    unlisted = [name for name in names if name not in listed]
    assert unlisted == []


def test_running_md_names_the_keys_the_fingerprint_leaves_out_and_the_config_links_there():
    running = REPO / "docs" / "running.md"
    section = running.read_text().split("\n## Resuming\n", 1)[1].split("\n## ", 1)[0]
    listed = re.search(r"((?:`[\w.]+`,\s+)+`[\w.]+`\s+and\s+`[\w.]+`)\s+\(`IGNORED_KEYS`", section)
    assert listed is not None, (
        "docs/running.md § Resuming lists IGNORED_KEYS as `a`, `b` and `c` (`IGNORED_KEYS`"
    )
    assert sorted(re.findall(r"`([\w.]+)`", listed.group(1))) == sorted(IGNORED_KEYS)
    assert "docs/running.md#resuming" in (REPO / "conf" / "config.yaml").read_text()
    assert "resuming" in anchors(running)


def test_a_broken_link_and_a_missing_heading_are_found(tmp_path: Path):
    (tmp_path / "other.md").write_text("# Title\n\n## Two words\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#two-words) [gone](missing.md) [bad](other.md#three) [web](https://x.org)\n"
        "`[code](nowhere.md)`\n```\n[fenced](nowhere.md)\n```\n"
    )
    assert broken_links(page, tmp_path) == [
        "missing.md: no such file",
        "other.md#three: no heading #three in other.md",
    ]
