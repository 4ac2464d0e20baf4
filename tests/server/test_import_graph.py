"""The language server's modules import each other in one direction only: a feature never needs
the module that assembles the server, so each part can be read, tested and replaced on its own.
Imports made only for type checking count too: a cycle there is a cycle in the design."""

from __future__ import annotations

import ast
from pathlib import Path

import flower_lsp
from cycles import a_cycle

PACKAGE = Path(flower_lsp.__file__).parent
MODULES = {path.stem for path in PACKAGE.glob("*.py")}


def imports_of(module: str) -> set[str]:
    """The package's modules that `module` imports, wherever the import statement sits."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0 and not (node.module or "").startswith("flower_lsp"):
                continue
            base = (node.module or "").removeprefix("flower_lsp").lstrip(".")
            if base:
                found.add(base.split(".")[0])
            else:  # from . import protocol, __version__
                found |= {a.name if a.name in MODULES else "__init__" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("flower_lsp.")}
    return found - {module}


def graph() -> dict[str, set[str]]:
    return {module: imports_of(module) for module in MODULES}


def test_the_import_graph_of_the_language_server_has_no_cycle() -> None:
    edges = graph()
    assert len(edges) >= 10 and edges["server"] >= {"runs", "questions", "diagnostics", "host"}
    cycle = a_cycle(edges)
    assert cycle is None, " -> ".join(cycle or [])


def test_no_part_imports_the_module_that_assembles_the_server() -> None:
    importers = sorted(m for m, deps in graph().items() if "server" in deps and m != "__main__")
    assert importers == []


def test_the_shared_helpers_are_a_leaf() -> None:
    assert imports_of("common") <= {"protocol", "wire", "negotiation"}
    assert imports_of("negotiation") <= {"protocol"}
    assert imports_of("wire") <= {"protocol", "notation"}
    assert imports_of("notation") <= {"protocol"}
    assert imports_of("protocol") == set()


def test_the_generators_are_no_part_of_the_running_server() -> None:
    generators = {"gen_typescript", "gen_lua", "reference"}
    assert {m for m, deps in graph().items() if deps & generators} == set()


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert a_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert a_cycle({"a": {"b"}, "b": set()}) is None
