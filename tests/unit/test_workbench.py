from __future__ import annotations

from pathlib import Path

import pytest

from flower.core.workbench import Workbench


def write(p: Path, text: str) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    d = tmp_path / "proj"
    d.mkdir()
    return d


# -- layout ------------------------------------------------------------------------------------


def test_default_layout(ws: Path) -> None:
    wb = Workbench(ws)
    assert wb.root == ws.resolve() / ".flower"
    assert wb.scripts == wb.root / "scripts"
    assert wb.artifacts == wb.root / "artifacts"
    assert wb.notes == wb.root / "notes"
    assert wb.index_path == wb.root / "INDEX.md"
    assert wb.external is False
    assert (wb.dirname, wb.max_index_entries, wb.home) == (".flower", 40, None)


def test_workspace_is_resolved(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ws.parent)
    wb = Workbench(Path("proj"))
    assert wb.workspace == ws.resolve()
    assert wb.workspace.is_absolute()


def test_dirname(ws: Path) -> None:
    assert Workbench(ws, dirname="bench").root == ws.resolve() / "bench"


def test_home_overrides_dirname_and_is_external(ws: Path, tmp_path: Path) -> None:
    home = tmp_path / "outside" / ".." / "outside-bench"
    wb = Workbench(ws, dirname="ignored", home=home)
    assert wb.root == (tmp_path / "outside-bench").resolve()
    assert wb.external is True


def test_home_inside_workspace_is_not_external(ws: Path) -> None:
    assert Workbench(ws, home=ws / "sub" / "bench").external is False


def test_show(ws: Path, tmp_path: Path) -> None:
    wb = Workbench(ws)
    assert wb.show(ws / ".flower" / "scripts" / "a.py") == ".flower/scripts/a.py"
    outside = tmp_path / "elsewhere" / "x.txt"
    assert wb.show(outside) == str(outside.resolve())


def test_ensure_creates_dirs_and_chains(ws: Path) -> None:
    wb = Workbench(ws).ensure()
    assert isinstance(wb, Workbench)
    assert wb.scripts.is_dir() and wb.artifacts.is_dir() and wb.notes.is_dir()
    wb.ensure()  # idempotent


# -- descriptions ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,text,desc",
    [
        (
            "a.py",
            "#!/usr/bin/env python3\n# desc: check the API answers\nprint(1)\n",
            "check the API answers",
        ),
        ("b.js", "// desc: build the bundle\nconsole.log(1)\n", "build the bundle"),
        ("c.sql", "-- desc: count orders per day\nselect 1;\n", "count orders per day"),
        ("d.lua", "-- DESC:  shout  \nprint(1)\n", "shout"),
        ("e.sh", "#!/bin/sh\n# reset the database\nrm -f db\n", "reset the database"),
        (
            "f.py",
            '"""Reproduce the crash on empty input.\n\nMore text.\n"""\n',
            "Reproduce the crash on empty input.",
        ),
        ("g.py", '#!/usr/bin/env python3\n"""\nSecond-line docstring.\n"""\n', "Second-line docstring."),
        ("h.py", "# -*- coding: utf-8 -*-\n\n# real comment\n", "real comment"),
        ("i.txt", "no comments at all\njust text\n", ""),
        ("j.md", "# 决策:用 SQLite 存会话\n\n理由……\n", "决策:用 SQLite 存会话"),
    ],
)
def test_descriptions(ws: Path, name: str, text: str, desc: str) -> None:
    wb = Workbench(ws).ensure()
    write(wb.scripts / name, text)
    [(shown, got, size)] = wb.scan(wb.scripts)
    assert shown == f".flower/scripts/{name}"
    assert got == desc
    assert size == len(text.encode("utf-8"))


def test_desc_tag_wins_over_earlier_comment(ws: Path) -> None:
    wb = Workbench(ws).ensure()
    write(wb.scripts / "a.py", "#!/usr/bin/env python3\n# helper module\n# desc: the real one\n")
    assert wb.scan(wb.scripts)[0][1] == "the real one"


def test_desc_tag_must_be_within_first_eight_lines(ws: Path) -> None:
    wb = Workbench(ws).ensure()
    write(wb.scripts / "late.py", "x = 1\n" * 8 + "# desc: too late\n")
    write(wb.scripts / "ok.py", "x = 1\n" * 7 + "# desc: just in time\n")
    descs = {Path(p).name: d for p, d, _ in wb.scan(wb.scripts)}
    assert descs["ok.py"] == "just in time"
    assert descs["late.py"] != "too late"


def test_desc_is_cut_at_100_chars(ws: Path) -> None:
    wb = Workbench(ws).ensure()
    write(wb.scripts / "long.py", "# desc: " + "x" * 300 + "\n")
    write(wb.scripts / "long2.py", "# " + "y" * 300 + "\n")
    assert [len(d) for _, d, _ in wb.scan(wb.scripts)] == [100, 100]


def test_binary_files_have_no_description(ws: Path) -> None:
    wb = Workbench(ws).ensure()
    data = b"\x89PNG\r\n\x00\x00# desc: fake\n"
    (wb.artifacts / "img.png").write_bytes(data)
    [(_, desc, size)] = wb.scan(wb.artifacts)
    assert desc == "" and size == len(data)


# -- scan --------------------------------------------------------------------------------------


def test_scan_recurses_and_skips_dotfiles(ws: Path) -> None:
    wb = Workbench(ws).ensure()
    write(wb.scripts / "top.py", "# desc: top\n")
    write(wb.scripts / "sub" / "deep.py", "# desc: deep\n")
    write(wb.scripts / ".hidden.py", "# desc: hidden\n")
    write(wb.scripts / ".cache" / "x.py", "# desc: cached\n")
    paths = [p for p, _, _ in wb.scan(wb.scripts)]
    assert paths == [".flower/scripts/sub/deep.py", ".flower/scripts/top.py"]


def test_scan_missing_dir_is_empty(ws: Path) -> None:
    wb = Workbench(ws)
    assert wb.scan(wb.scripts) == []


# -- INDEX.md ----------------------------------------------------------------------------------


def test_refresh_writes_index_with_everything(ws: Path) -> None:
    wb = Workbench(ws, max_index_entries=2).ensure()
    for i in range(5):
        write(wb.scripts / f"s{i}.py", f"# desc: script number {i}\n")
    write(wb.artifacts / "report.md", "# Benchmark report\n" + "z" * 3000)
    content = wb.refresh()
    assert wb.index_path.read_text(encoding="utf-8") == content
    for i in range(5):  # the cap does not apply to INDEX.md
        assert f".flower/scripts/s{i}.py" in content and f"script number {i}" in content
    assert ".flower/artifacts/report.md" in content and "Benchmark report" in content
    assert "另有" not in content
    assert not any(p.name.endswith(".tmp") for p in wb.root.iterdir())


def test_refresh_on_empty_workbench_creates_index(ws: Path) -> None:
    wb = Workbench(ws)
    content = wb.refresh()
    assert wb.index_path.is_file()
    assert "scripts/" in content and "artifacts/" in content and "notes/" in content


def test_refresh_does_not_list_itself(ws: Path) -> None:
    wb = Workbench(ws).ensure()
    wb.refresh()
    assert "INDEX.md" not in wb.refresh()


def test_refresh_tolerates_an_unwritable_location(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    wb = Workbench(tmp_path, home=blocker / "bench")
    assert "scripts/" in wb.refresh()  # content still returned, nothing raised


# -- prompt block ------------------------------------------------------------------------------


def test_prompt_block_rules_and_entries(ws: Path) -> None:
    wb = Workbench(ws).ensure()
    write(wb.scripts / "check.py", "# desc: check the API answers\n")
    block = wb.prompt_block()
    assert ".flower/scripts/check.py" in block and "check the API answers" in block
    assert "# desc:" in block
    assert "2000" in block and "artifacts/" in block
    assert "notes/" in block and "一个决策一个文件" in block
    assert "绝对路径" not in block


def test_prompt_block_caps_each_category(ws: Path) -> None:
    wb = Workbench(ws, max_index_entries=3).ensure()
    for i in range(10):
        write(wb.scripts / f"s{i:02d}.py", f"# desc: n{i}\n")
    for i in range(2):
        write(wb.notes / f"n{i}.md", f"# note {i}\n")
    block = wb.prompt_block()
    assert sum(f".flower/scripts/s{i:02d}.py" in block for i in range(10)) == 3
    assert "…另有 7 个" in block
    assert ".flower/notes/n0.md" in block and ".flower/notes/n1.md" in block
    assert block.count("另有") == 1


def test_prompt_block_external_uses_absolute_paths(ws: Path, tmp_path: Path) -> None:
    wb = Workbench(ws, home=tmp_path / "bench").ensure()
    write(wb.scripts / "a.py", "# desc: a\n")
    block = wb.prompt_block()
    assert "绝对路径" in block
    assert str(wb.root) in block
    assert str(wb.scripts / "a.py") in block
