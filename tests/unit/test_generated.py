"""The gate on generated files (`make generate-check`, scripts/generate.py): a fresh generation
passes, and any generated file that differs from what its source makes now fails the gate, named,
with the way out (run make generate). The repository's own files are the gate's to check, in
`make lint`; these tests plant stale copies in a temporary tree."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "generate.py"


def _load() -> Any:
    spec = importlib.util.spec_from_file_location("generate", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = _load()


@pytest.fixture(scope="module")
def generation(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh generation of every generated file (the catalogue from the committed translations)."""
    root = tmp_path_factory.mktemp("generated")
    po = root / gen.PO
    po.parent.mkdir(parents=True)
    shutil.copyfile(ROOT / gen.PO, po)
    gen.generate(root)
    return root


@pytest.fixture
def fresh(generation: Path, tmp_path: Path) -> Path:
    """A tree of its own for each test, to plant stale files in."""
    return Path(shutil.copytree(generation, tmp_path / "tree"))


def _check(against: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--check", "--against", str(against)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_every_generated_file_is_listed_once_with_its_generator() -> None:
    assert len(set(gen.GENERATED)) == len(gen.GENERATED) == 5
    doc = gen.__doc__
    for name in gen.GENERATED:
        assert f"| {name} |" in doc, f"{name} is missing from the table of scripts/generate.py"


def test_a_fresh_generation_passes(fresh: Path) -> None:
    assert gen.stale(fresh) == []
    done = _check(fresh)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "generated files are fresh (5 files)"


def _plant(path: Path) -> None:
    path.write_bytes(path.read_bytes() + (b"\x00" if path.suffix == ".mo" else b"\n// by hand\n"))


@pytest.mark.parametrize("name", gen.GENERATED)
def test_a_stale_file_is_named_with_its_difference(fresh: Path, name: str) -> None:
    _plant(fresh / name)
    [(found, difference)] = gen.stale(fresh)
    assert found == name
    if name.endswith(".mo"):
        assert difference == [f"  {name}: differs (a binary file)"]
    else:
        assert f"    +++ {name} (generated)" in difference and "    -// by hand" in difference


def test_the_gate_fails_on_a_stale_file_and_says_what_to_run(fresh: Path) -> None:
    _plant(fresh / "docs/protocol.md")
    _plant(fresh / gen.MO)
    done = _check(fresh)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[0] == "stale generated files: run make generate"
    assert [line.split(":")[0].strip() for line in lines[1:] if not line.startswith("    ")] == [
        "docs/protocol.md",
        gen.MO,
    ]


@pytest.mark.parametrize("name", ["editors/neovim/lua/flower/protocol.lua", gen.PO])
def test_a_missing_file_fails_the_gate(fresh: Path, name: str) -> None:
    (fresh / name).unlink()
    found = dict(gen.stale(fresh))
    assert found[name] == [f"  {name}: missing"]
    # without its .po the catalogue starts afresh, untranslated: its .mo is stale too
    assert set(found) == ({gen.PO, gen.MO} if name == gen.PO else {name})


def test_a_catalogue_without_a_text_the_code_marks_is_stale(fresh: Path) -> None:
    # the .po as it was before a text was marked in the code: one entry fewer
    po = fresh / gen.PO
    entries = po.read_text(encoding="utf-8").split("\n\n")
    dropped = next(i for i, entry in enumerate(entries) if 'msgid "' in entry and i > 0)
    po.write_text("\n\n".join(entries[:dropped] + entries[dropped + 1 :]), encoding="utf-8")
    with po.open("rb") as text, (fresh / gen.MO).open("wb") as compiled:
        write_mo(compiled, read_po(text))  # the .mo of that .po: true to it, not to the code
    # the merge brings the entry back untranslated (test_i18n.py then asks for its English); an
    # untranslated entry compiles to nothing, so the .mo is still that of the committed .po
    [(name, difference)] = gen.stale(fresh)
    assert name == gen.PO and any(line.startswith("    +msgid") for line in difference), difference
