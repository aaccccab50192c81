"""The package's form (issue 44): few top-level entries, short modules, a one-way import graph, and a
training path in which only the entry point and the resolving step read the composed config."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LRA = Path(__file__).resolve().parent.parent / "lra"
ZOO = LRA.parent / "attention_zoo"
# The groups of attention_zoo (their docstrings) and the groups each may import, besides the contract at
# the package's top (registry, option types, state sizes) and itself.
ZOO_GROUPS = {"parts": set(), "cores": {"parts"}, "mixers": {"parts"}}
MAX_TOP_LEVEL = 12
MAX_LINES = 300
TRAINING_ENTRY = "lra.job.train"
# Read the composed config: the entry point and the resolving step (with its checks); and the Hydra glue
# (resolvers, the errors of a bad command line, the shortcut an error names, the job's name and identity).
READS_COMPOSED_CONFIG = {
    "lra.job.train",
    "lra.job.resolve",
    "lra.job.checks",
    "lra.job.attention_checks",
    "lra.job.shortcuts",
    "lra.job.resolvers",
    "lra.job.run_identity",  # a job's identity is its whole config, as plain data
    "lra.config.hydra_errors",
    "lra.results.summary_tables",  # the sweep's Hydra callback
}
MAX_CONFIG_MODULES = 8  # the modules the composed config is handed to, from the entry point on
MAX_CONFIG_CLIMBS = 5  # and the calls that hand it back up, to a module above the caller
MAX_BENCH_LINES = 2400  # lra/bench/ in all: what its commands repeat is shared (issue 53)


def module_name(path: Path) -> str:
    parts = path.relative_to(LRA.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(LRA.rglob("*.py"))}


def imported(name: str) -> set[str]:
    """The ``lra`` modules that module ``name`` imports anywhere (inside functions and under
    ``TYPE_CHECKING`` too)."""
    found = set()
    for node in ast.walk(ast.parse(MODULES[name].read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.update([node.module, *(f"{node.module}.{alias.name}" for alias in node.names)])
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {module for module in found if module in MODULES and module != name}


def reachable(start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(imported(name))
    return seen


def test_lra_has_few_top_level_entries():
    entries = [path.name for path in LRA.iterdir() if path.name != "__pycache__"]
    assert len(entries) <= MAX_TOP_LEVEL, sorted(entries)


@pytest.mark.parametrize("name", list(MODULES))
def test_no_module_is_over_the_line_budget(name):
    assert len(MODULES[name].read_text().splitlines()) <= MAX_LINES


def test_the_benchmarks_fit_their_line_budget():
    lines = sum(len(path.read_text().splitlines()) for path in (LRA / "bench").glob("*.py"))
    assert lines <= MAX_BENCH_LINES, lines


def package(name: str) -> str:
    """The sub-package a module belongs to (``lra.job``), or the module itself at the top level."""
    parts = name.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 or (LRA / parts[-1]).is_dir() else name


def circle(graph: dict[str, set[str]]) -> list[str] | None:
    """An import circle of ``graph`` (node -> the nodes it imports), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*path, node, target]
            found = None if target in state else visit(target, [*path, node])
            if found:
                return found
        state[node] = 2
        return None

    for node in sorted(graph):
        found = None if node in state else visit(node, [])
        if found:
            return found
    return None


def test_the_import_graph_runs_one_way_between_modules_and_between_sub_packages():
    modules = {name: imported(name) for name in MODULES}
    packages: dict[str, set[str]] = {}
    for name, targets in modules.items():
        packages.setdefault(package(name), set()).update({package(target) for target in targets})
    packages = {name: targets - {name} for name, targets in packages.items()}
    assert circle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]  # the check finds one
    assert circle(modules) is None
    assert circle(packages) is None


def test_only_the_entry_point_and_the_resolving_step_read_the_composed_config():
    path = reachable(TRAINING_ENTRY)
    assert {"lra.job.resolve", "lra.model.module", "lra.data", "lra.job.resume"} <= path
    for name in sorted(path - READS_COMPOSED_CONFIG):
        tree = ast.parse(MODULES[name].read_text())
        names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
        names |= {
            alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names
        }
        assert "DictConfig" not in names, f"{name} names DictConfig"
        untyped = [
            f"{function.name}({argument.arg})"
            for function in ast.walk(tree)
            if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
            for argument in function.args.args + function.args.kwonlyargs
            if argument.arg in ("cfg", "config")
        ]
        assert not untyped, f"{name} takes the config as a mapping: {untyped}"


def rooted_at(node: ast.AST, name: str) -> bool:
    """Whether ``node`` is ``name`` or a node of it (``cfg``, ``cfg.task``, ``cfg["pretrain"]``)."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return isinstance(node, ast.Name) and node.id == name


def callees(module: str) -> dict[str, tuple[str, str]]:
    """Names callable in ``module`` -> (module, function): its own functions and its ``from`` imports."""
    tree = ast.parse(MODULES[module].read_text())
    found = {node.name: (module, node.name) for node in tree.body if isinstance(node, ast.FunctionDef)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in MODULES and node.level == 0:
            found |= {alias.asname or alias.name: (node.module, alias.name) for alias in node.names}
    return found


def function_of(module: str, name: str) -> ast.FunctionDef | None:
    tree = ast.parse(MODULES[module].read_text())
    return next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def config_calls(module: str, function: str, parameter: str, seen: set) -> list[tuple[str, str]]:
    """(caller module, callee module) of each call that hands ``parameter`` (the composed config, or a
    node of it) on, from ``function`` of ``module`` down, in the order the code is written."""
    node = function_of(module, function)
    if node is None or (module, function, parameter) in seen:
        return []
    seen.add((module, function, parameter))
    names, moves = callees(module), []
    calls = sorted(
        (n for n in ast.walk(node) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset)
    )
    for call in calls:
        if not (isinstance(call.func, ast.Name) and call.func.id in names):
            continue
        target_module, target = names[call.func.id]
        callee = function_of(target_module, target)
        if callee is None:
            continue
        params = [a.arg for a in callee.args.args]
        passed = [params[i] for i, a in enumerate(call.args) if i < len(params) and rooted_at(a, parameter)]
        passed += [k.arg for k in call.keywords if k.arg and rooted_at(k.value, parameter)]
        for name in passed:
            moves.append((module, target_module))
            moves += config_calls(target_module, target, name, seen)
    return moves


def test_the_composed_config_reaches_few_modules_and_is_never_handed_back_up():
    """Follow ``cfg`` (and its nodes) from ``lra.job.train.run`` through every call that passes it on:
    it reaches the entry point, the resolving step and its checks, and goes down only."""
    moves = config_calls(TRAINING_ENTRY, "run", "cfg", set())
    reached = {TRAINING_ENTRY} | {callee for _, callee in moves}
    assert "lra.job.resolve" in reached and "lra.job.checks" in reached  # the walk finds its way
    assert len(reached) <= MAX_CONFIG_MODULES, sorted(reached)
    upward = [
        (caller, callee) for caller, callee in moves if caller != callee and caller in reachable(callee)
    ]
    assert len(upward) <= MAX_CONFIG_CLIMBS, upward


def test_the_zoo_groups_import_only_what_their_docstrings_allow():
    """``attention_zoo``: parts import no entry; cores and mixers import parts, never each other."""
    wrong = []
    for path in sorted(ZOO.rglob("*.py")):
        group = path.relative_to(ZOO).parts[0]
        if group not in ZOO_GROUPS:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                target = name.split(".")[1] if name.startswith("attention_zoo.") else None
                if target in ZOO_GROUPS and target not in ZOO_GROUPS[group] | {group}:
                    wrong.append(f"{path.relative_to(ZOO)} imports {name}")
    assert not wrong, wrong
