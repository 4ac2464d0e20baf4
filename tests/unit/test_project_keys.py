"""Odd folder names, generated: the project key is the SDK's everywhere, a folder is refused exactly
when the CLI would file it elsewhere than the SDK looks, and the language server's URIs name the
folder whatever the characters."""

from __future__ import annotations

import random
import re
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygls.uris import from_fs_path

from flower.core.projectkey import project_key, unkeyable
from flower.sim import oddpaths

# Characters people put in folder names: every alphabet of the generator, emoji and marks too.
NAME_CHARS = st.sampled_from("".join(oddpaths.ALPHABETS.values()) + oddpaths.ASTRAL + "\u0301\u0308\u0327")
NAMES = st.text(NAME_CHARS, min_size=1, max_size=80).filter(lambda t: t.strip() not in ("", ".", ".."))


def cli_folder_name(path: str) -> str:
    """The bundled CLI's own rule (its JavaScript, read from the binary): the replacement and the
    200-unit cut in UTF-16 code units, the hash over those units; a test oracle, checked against the
    real CLI by tests/e2e/test_odd_paths.py."""
    units = path.encode("utf-16-le", "surrogatepass")
    codes = [int.from_bytes(units[i : i + 2], "little") for i in range(0, len(units), 2)]
    sanitized = "".join(chr(c) if re.match(r"[a-zA-Z0-9]", chr(c)) else "-" for c in codes)
    if len(sanitized) <= 200:
        return sanitized
    h = 0
    for c in codes:
        h = (h * 31 + c) & 0xFFFFFFFF
    h = abs(h - (1 << 32) if h >= 1 << 31 else h)
    digits, out = "0123456789abcdefghijklmnopqrstuvwxyz", ""
    while h:
        h, r = divmod(h, 36)
        out = digits[r] + out
    return f"{sanitized[:200]}-{out or '0'}"


@settings(max_examples=500, deadline=None)
@given(seed=st.integers(0, 10**9))
def test_generated_workspaces_are_keyed_as_the_cli_keys_them(
    seed: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    ws = oddpaths.folder(random.Random(seed), tmp_path_factory.mktemp("odd"))
    assert unkeyable(ws) is None
    assert cli_folder_name(str(ws)) == project_key(ws)
    assert all(len(p.encode()) <= oddpaths.NAME_MAX for p in ws.parts)
    assert unicodedata.normalize("NFC", str(ws)) == str(ws)


@settings(max_examples=1000, deadline=None)
@given(parts=st.lists(NAMES, min_size=1, max_size=3))
def test_the_servers_uris_name_the_folder_whatever_its_characters(parts: list[str]) -> None:
    from flower_lsp.common import Folder, find_folder
    from flower_lsp.documents import same_document, uri_of

    path = Path("/work").joinpath(*parts)
    ours, theirs = uri_of(path), from_fs_path(str(path))
    assert theirs is not None
    assert same_document(ours, path) and same_document(theirs, path)
    folder = Folder(theirs, path.resolve(), path / "runs")
    assert find_folder([folder], ours) is folder and find_folder([folder], str(path)) is folder


@settings(max_examples=3000, deadline=None)
@given(parts=st.lists(NAMES, min_size=1, max_size=3))
def test_a_folder_is_refused_exactly_when_the_cli_would_file_it_elsewhere(parts: list[str]) -> None:
    path = Path("/work").joinpath(*parts)
    apart = cli_folder_name(str(path)) != project_key(path)
    assert (unkeyable(path) is not None) == apart, (str(path), cli_folder_name(str(path)), project_key(path))


def test_marks_the_nfc_form_only_reorders_key_alike_and_a_long_path_hashes_them_apart() -> None:
    # U+0301 (class 230) before U+0327 (class 202): NFC swaps them, composes nothing
    short = Path("/work/\u0301\u0327")
    assert unicodedata.normalize("NFC", str(short)) != str(short)
    assert unkeyable(short) is None and cli_folder_name(str(short)) == project_key(short)
    assert unkeyable(Path("/work/\u0327\u0301")) is None
    # over 200 characters the hash reads the units in their order: the swap files it elsewhere
    long = Path("/work/" + "a" * 220 + "\u0301\u0327")
    assert cli_folder_name(str(long)) != project_key(long)
    assert unkeyable(long) is not None
