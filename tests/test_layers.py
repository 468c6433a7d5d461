"""The repository's import rule (docs/architecture.md, "Imports go downward only"), read from the
source with `ast`: which top-level package may import which, and no import cycle among the
modules of the runtime, the tooling, the conformance suite and the evaluation. Every import
counts, in a function or under TYPE_CHECKING too: a cycle hidden there is still a cycle."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {
    "symphony": ROOT / "controller" / "symphony",
    "symphony_tools": ROOT / "controller" / "symphony_tools",
    "conformance": ROOT / "conformance",
    "evaluation": ROOT / "evaluation",
}
# Which of the others each may import: the runtime none; the tooling and the conformance suite
# the runtime; the evaluation all three (bench/, ptf_tests/ and tests/ sit on top of everything).
# An implementation in a higher layer reaches the conformance suite through an entry point
# (conformance/adapters/__init__.py), not an import.
MAY_IMPORT: dict[str, set[str]] = {
    "symphony": set(),
    "symphony_tools": {"symphony"},
    "conformance": {"symphony"},
    "evaluation": {"symphony", "symphony_tools", "conformance"},
}


def _modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the four packages."""
    found = {}
    for name, top in PACKAGES.items():
        for path in top.rglob("*.py"):
            parts = [name, *path.relative_to(top).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imports(module: str, path: Path, modules: dict[str, Path]) -> Iterator[tuple[int, str]]:
    """(line, imported name) of every import in `path`: for `from a import b` the module a.b
    when it is one, else a; relative imports resolved against `module`."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package[: len(package) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield node.lineno, sub if sub in modules else base


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    """The module of the four packages that `name` is or lies in (None: outside them)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def test_each_package_imports_only_the_layers_below_it() -> None:
    modules = _modules()
    wrong = []
    for module, path in modules.items():
        layer = module.split(".")[0]
        for line, name in _imports(module, path, modules):
            target = name.split(".")[0]
            if target in PACKAGES and target != layer and target not in MAY_IMPORT[layer]:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {layer} imports {name}")
    assert not wrong, "imports against the layering:\n" + "\n".join(wrong)


def test_no_import_cycle_among_modules() -> None:
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for _, name in _imports(module, path, modules):
            target = _owner(name, modules)
            if target is not None and target != module:
                graph[module].add(target)
    cycles = _strongly_connected(graph)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(sorted(c)) for c in cycles)


def test_the_checks_see_a_cycle_and_a_wrong_import(tmp_path: Path) -> None:
    """The helpers above on a made-up package: a cycle is found, an upward import is read."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _strongly_connected(graph) == [{"a", "b", "c"}]
    src = tmp_path / "conformance" / "x.py"
    src.parent.mkdir()
    src.write_text("from evaluation.fabric import sim\nif True:\n    import evaluation\n")
    modules = {"conformance.x": src, "evaluation.fabric.sim": src}
    assert list(_imports("conformance.x", src, modules)) == [
        (1, "evaluation.fabric.sim"),
        (3, "evaluation"),
    ]


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """The components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found
