"""The first import cycle of a module graph, for the tests that hold the engine and the server to
one direction (tests/unit/test_layers.py, tests/server/test_import_graph.py)."""

from __future__ import annotations


def a_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str] | None:
        if module in path:
            return [*path[path.index(module) :], module]
        if module in done:
            return None
        for dep in sorted(edges.get(module, ())):
            cycle = visit(dep, [*path, module])
            if cycle:
                return cycle
        done.add(module)
        return None

    for module in sorted(edges):
        cycle = visit(module, [])
        if cycle:
            return cycle
    return None
