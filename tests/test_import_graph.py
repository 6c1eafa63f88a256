"""The import graph of every package (grimp, the graph import-linter checks): no module imports itself in a
circle, and every package has a place in the layers contract of pyproject.toml.

A cycle is found as a strongly connected component of the module graph (imports inside functions and under
``TYPE_CHECKING`` count: a loop held together by a late import is still a loop). The cycles that exist
outside ``connect/cli`` are listed in ``ALLOWED_CYCLES`` with the reason each is there; the list can only
shrink: a cycle that no longer exists fails the test until it is taken off the list.
"""

from __future__ import annotations

import tomllib
from collections import deque
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("connect", "plugins", "rest", "spark_sinks", "services")

# Each entry: the modules of one cycle, and why it is still there. Remove an entry once its cycle is gone.
ALLOWED_CYCLES: dict[frozenset[str], str] = {}


def _graph() -> grimp.ImportGraph:
    return grimp.build_graph(*PACKAGES)


def _strongly_connected(graph: grimp.ImportGraph) -> list[set[str]]:
    """The components of more than one module (Tarjan's algorithm, iterative: the graph is deep)."""
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in sorted(graph.modules)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for start in edges:
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            for i in range(child, len(edges[node])):
                target = edges[node][i]
                if target not in index:
                    work.append((node, i + 1))
                    work.append((target, 0))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
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
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
    return found


def _shortest_cycle(graph: grimp.ImportGraph, component: set[str]) -> list[str]:
    """One shortest loop through the component, each step with the line of its import."""
    best: list[str] | None = None
    for start in sorted(component):
        came_from: dict[str, str] = {start: start}
        queue = deque([start])
        loop: list[str] | None = None
        while queue and loop is None:
            node = queue.popleft()
            for target in sorted(graph.find_modules_directly_imported_by(node) & component):
                if target == start:
                    loop = [node]
                    while loop[-1] != start:
                        loop.append(came_from[loop[-1]])
                    loop.reverse()
                    break
                if target not in came_from:
                    came_from[target] = node
                    queue.append(target)
        if loop is not None and (best is None or len(loop) < len(best)):
            best = loop
    assert best is not None
    steps = []
    for importer, imported in zip(best, [*best[1:], best[0]], strict=True):
        lines = sorted(d["line_number"] for d in graph.get_import_details(importer=importer, imported=imported))
        steps.append(f"{importer} -> {imported} (line {', '.join(map(str, lines)) or '?'})")
    return steps


def test_no_module_imports_itself_through_others():
    graph = _graph()
    cycles = [c for c in _strongly_connected(graph) if frozenset(c) not in ALLOWED_CYCLES]
    report = "\n\n".join("\n".join([*_shortest_cycle(graph, c), f"(one loop of the knot {sorted(c)})"])
                           for c in cycles)
    assert not cycles, f"import cycles (break them; a late import inside a function is still one):\n{report}"


def test_the_allowed_cycles_still_exist():
    """The allow-list only shrinks: a cycle that was broken comes off it."""
    present = {frozenset(c) for c in _strongly_connected(_graph())}
    gone = [sorted(c) for c in ALLOWED_CYCLES if c not in present]
    assert not gone, f"these cycles are gone: remove them from ALLOWED_CYCLES in {Path(__file__).name}: {gone}"


def test_the_cycle_finder_sees_a_loop_through_a_late_import():
    graph = grimp.ImportGraph()
    for name in ("pkg", "pkg.a", "pkg.b", "pkg.c"):
        graph.add_module(name)
    graph.add_import(importer="pkg.a", imported="pkg.b", line_number=3, line_contents="import pkg.b")
    graph.add_import(importer="pkg.b", imported="pkg.c", line_number=4, line_contents="import pkg.c")
    graph.add_import(importer="pkg.c", imported="pkg.a", line_number=90, line_contents="    import pkg.a")
    components = _strongly_connected(graph)
    assert components == [{"pkg.a", "pkg.b", "pkg.c"}]
    assert _shortest_cycle(graph, components[0]) == [
        "pkg.a -> pkg.b (line 3)", "pkg.b -> pkg.c (line 4)", "pkg.c -> pkg.a (line 90)"]


def _layers_contract() -> dict:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layered = [c for c in config["contracts"] if c["type"] == "layers"]
    assert len(layered) == 1, "one layers contract over every package"
    return layered[0]


def test_every_package_has_a_layer():
    """import-linter checks exhaustiveness only inside containers; the layers here span the top-level packages,
    so a new package (or a new module of connect/) fails here until it is given its place."""
    named = {part.strip().strip("()") for layer in _layers_contract()["layers"]
             for part in layer.replace(":", "|").split("|")}
    graph = _graph()
    expected = {m for m in graph.find_children("connect")} | (set(PACKAGES) - {"connect"})
    missing = sorted(m for m in expected if m not in named)
    assert not missing, f"not in the layers contract of pyproject.toml: {missing}"
