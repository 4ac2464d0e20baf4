"""The engine's layers import downward only, and no module of the engine needs itself back.

A layer may import the layers below it and never one above: the leaf helpers (`base`, and the
`plugin` locator) need no other part of flower; the Bash walls (`shell`) only the leaves; the
session stores (`stores`) the walls; the runtime and its parts (`core`) the stores; the flows
(`workflow`) the runtime; the terminal (`cli`) the flows; the fleet's worker runs the terminal's
path (`fleet`); the scripted model's rigs (`sim`) stand above it all, as does the entry point
(`__main__`), the one module that knows every layer. The engine never imports the language server.
Imports made only for type checking, or inside a function, count too: a cycle there is a cycle
in the design.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import flower
from cycles import a_cycle

ENGINE = Path(flower.__file__).parent
# lowest first; a layer may import any layer before it in this list
LAYERS: list[tuple[str, ...]] = [
    ("base", "plugin"),
    ("shell",),
    ("stores",),
    ("core",),
    ("workflow",),
    ("cli",),
    ("fleet",),
    ("sim",),
    ("__main__",),
]
RANK = {part: rank for rank, parts in enumerate(LAYERS) for part in parts}


def module_of(path: Path) -> str:
    rel = path.relative_to(ENGINE).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(("flower", *parts))


def _resolved(node: ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """The absolute modules an import statement names (a name may itself be a submodule)."""
    if node.level:
        base = module.split(".")
        if not is_package:
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    return [prefix, *(f"{prefix}.{alias.name}" for alias in node.names)]


@functools.cache
def imports() -> dict[str, set[str]]:
    """module -> the engine's (and the server's) modules it imports, wherever the statement sits."""
    known = {module_of(path) for path in ENGINE.rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for path in ENGINE.rglob("*.py"):
        module = module_of(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                names = _resolved(node, module, path.name == "__init__.py")
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name.startswith("flower_lsp"):
                    found.add("flower_lsp")
                # the longest known module the name lies in (a name may be a function)
                while name and name not in known:
                    name = name.rpartition(".")[0]
                if name and name != module:
                    found.add(name)
        edges[module] = found
    return edges


def layer_of(module: str) -> str | None:
    """The layer a module belongs to; None for the package itself (its lazy facade)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_every_part_of_the_engine_has_a_layer() -> None:
    assert {layer_of(m) for m in imports()} - {None} <= set(RANK)


def test_the_engine_never_imports_the_language_server() -> None:
    assert sorted(m for m, deps in imports().items() if "flower_lsp" in deps) == []


def test_layers_import_downward_only() -> None:
    upward = []
    for module, deps in sorted(imports().items()):
        here = layer_of(module)
        for dep in sorted(deps - {"flower_lsp"}):
            there = layer_of(dep)
            if here is None or there is None or here == there:
                continue  # the package's facade (`__version__`, lazy names) is loaded before any module
            if RANK[there] > RANK[here]:
                upward.append(f"{module} -> {dep}")
    assert upward == []


def test_no_module_of_the_engine_imports_itself_back() -> None:
    # a package's __init__ re-exports its modules; that edge is the facade, not a dependency
    edges = {
        module: {dep for dep in deps if not module.startswith(dep + ".") and dep != "flower_lsp"}
        for module, deps in imports().items()
    }
    assert a_cycle(edges) is None


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    # the walk resolves relative imports the way Python does: `from ..cli import x` in core
    tree = ast.parse("from ..cli.render import Render\nfrom . import events\n")
    first, second = (node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom))
    assert _resolved(first, "flower.core.runtime", False)[0] == "flower.cli.render"
    assert _resolved(second, "flower.core", True)[1] == "flower.core.events"
    assert RANK["cli"] > RANK["core"]
