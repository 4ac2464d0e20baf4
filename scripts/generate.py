"""Every generated file of the repository, made from its one source.

    python scripts/generate.py            # `make generate`: write them all
    python scripts/generate.py --check    # `make generate-check`, a gate of `make lint`
    python scripts/generate.py --only catalogue   # `make messages`: the message catalogue alone

| file | generated from | by |
|---|---|---|
| vscode-extension/src/protocol.ts | server/flower_lsp/protocol.py | flower_lsp.gen_typescript |
| docs/protocol.md | server/flower_lsp/protocol.py | flower_lsp.reference |
| editors/neovim/lua/flower/protocol.lua | server/flower_lsp/protocol.py | flower_lsp.gen_lua |
| engine/flower/locale/en/LC_MESSAGES/flower.po | the texts marked in the code, merged | Babel |
| engine/flower/locale/en/LC_MESSAGES/flower.mo | that .po | Babel (compile) |

`--check` regenerates everything into a temporary folder (the catalogue from the committed
translations) and compares it with the committed files: it fails, naming each stale file with the
start of its difference, and says to run `make generate`. `--against DIR` compares with the files
under DIR instead (the gate's own tests plant stale files there).
"""

from __future__ import annotations

import argparse
import difflib
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from babel.messages.frontend import CommandLineInterface

from flower_lsp import gen_lua, gen_typescript, reference

ROOT = Path(__file__).resolve().parents[1]
LOCALE = "engine/flower/locale"
PO = f"{LOCALE}/en/LC_MESSAGES/flower.po"
MO = f"{LOCALE}/en/LC_MESSAGES/flower.mo"
# the folders whose marked texts the catalogue holds (docs/i18n.md)
MESSAGE_SOURCES = ("engine/flower", "server/flower_lsp")

PROTOCOL: dict[str, Callable[[], str]] = {
    "vscode-extension/src/protocol.ts": gen_typescript.typescript,
    "docs/protocol.md": reference.markdown,
    "editors/neovim/lua/flower/protocol.lua": gen_lua.lua,
}
CATALOGUE = (PO, MO)
GENERATED = (*PROTOCOL, *CATALOGUE)
PARTS = ("protocol", "catalogue")
DIFF_LINES = 30  # of each stale text file, the start of its difference


def write_protocol(into: Path) -> None:
    for name, make in PROTOCOL.items():
        path = into / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(make(), encoding="utf-8")


def _pybabel(*args: str, quiet: bool = True) -> None:
    # Babel's own command line, called in this process; it exits non-zero on a failure
    CommandLineInterface().run(["pybabel", *(["--quiet"] if quiet else []), *args])


def write_catalogue(into: Path, *, statistics: bool = False) -> None:
    """Merge the marked texts into the .po under `into` (new ones arrive untranslated, vanished ones
    are dropped, the header's dates stay as they are so that an unchanged catalogue is the same
    bytes), then compile its .mo beside it."""
    with tempfile.TemporaryDirectory(prefix="flower-messages-") as work:
        template = str(Path(work) / "flower.pot")
        _pybabel(
            "extract",
            "--no-location",
            "--sort-output",
            "--project",
            "flower",
            "--msgid-bugs-address",
            "",
            "--width",
            "100",
            "-o",
            template,
            *(str(ROOT / folder) for folder in MESSAGE_SOURCES),
        )
        locale = str(into / LOCALE)
        if (into / PO).is_file():
            _pybabel(
                "update",
                "--no-fuzzy-matching",
                "--ignore-obsolete",
                "--ignore-pot-creation-date",
                "--width",
                "100",
                "-i",
                template,
                "-d",
                locale,
                "-D",
                "flower",
                "-l",
                "en",
            )
        else:
            _pybabel("init", "-i", template, "-d", locale, "-D", "flower", "-l", "en")
    _pybabel("compile", "--statistics", "-d", locale, "-D", "flower", "-l", "en", quiet=not statistics)


def generate(into: Path, parts: tuple[str, ...] = PARTS, *, statistics: bool = False) -> None:
    """Write the generated files of `parts` under `into` (the repository itself for `make generate`)."""
    if "protocol" in parts:
        write_protocol(into)
    if "catalogue" in parts:
        write_catalogue(into, statistics=statistics)


def _difference(name: str, fresh: Path, committed: Path) -> list[str]:
    if not committed.is_file():
        return [f"  {name}: missing"]
    if name.endswith(".mo"):
        return [f"  {name}: differs (a binary file)"]
    diff = list(
        difflib.unified_diff(
            committed.read_text(encoding="utf-8").splitlines(),
            fresh.read_text(encoding="utf-8").splitlines(),
            f"{name} (committed)",
            f"{name} (generated)",
            lineterm="",
        )
    )
    more = [f"    ... {len(diff) - DIFF_LINES} more lines"] if len(diff) > DIFF_LINES else []
    return [f"  {name}:", *(f"    {line}" for line in diff[:DIFF_LINES]), *more]


def stale(against: Path) -> list[tuple[str, list[str]]]:
    """The generated files under `against` that differ from a fresh generation, each with what differs."""
    with tempfile.TemporaryDirectory(prefix="flower-generate-") as tmp:
        fresh = Path(tmp)
        # the catalogue's input is the translations being checked
        if (against / PO).is_file():
            (fresh / PO).parent.mkdir(parents=True)
            shutil.copyfile(against / PO, fresh / PO)
        generate(fresh)
        out = []
        for name in GENERATED:
            committed = against / name
            if not committed.is_file() or committed.read_bytes() != (fresh / name).read_bytes():
                out.append((name, _difference(name, fresh / name, committed)))
        return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/generate.py", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail while a generated file is stale")
    parser.add_argument("--against", type=Path, default=ROOT, help="with --check: the tree to check")
    parser.add_argument("--only", choices=PARTS, help="generate one part only")
    args = parser.parse_args(argv)
    if not args.check:
        generate(ROOT, (args.only,) if args.only else PARTS, statistics=True)
        return 0
    found = stale(args.against.resolve())
    if not found:
        print(f"generated files are fresh ({len(GENERATED)} files)")
        return 0
    lines = [f"stale generated file{'s' if len(found) > 1 else ''}: run make generate"]
    for _name, difference in found:
        lines += difference
    print("\n".join(lines), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
