"""The one write path under real resource faults: small tmpfs disks filled at generated points,
remounted read-only, folders made immutable or removed, a writer without permission (a real
unprivileged process: root ignores permission bits). Whatever the fault, a file flower writes
is the old one or the new one, never half, no temporary file is left, and the caller gets one
DiskFault that names the folder."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import pickle
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from claude_agent_sdk.types import SessionKey

from flower.base import files
from flower.base.files import DiskFault, atomic_write, fault_of, free_space
from flower.cli.problems import unwritable
from flower.core.guard import _spill, spill_guard
from flower.core.managed_block import place_block, read_block
from flower.core.rundir import update_json
from flower.core.workbench import Workbench
from flower.sim import disks
from flower.stores.sqlite import SqliteSessionStore

pytestmark = pytest.mark.skipif(disks.available() is not None, reason=str(disks.available()))

KEY: SessionKey = {"project_key": "-ws", "session_id": "s1"}


def entry(uid: str, text: str) -> Any:
    """A transcript entry as the SDK hands it to a store."""
    return {"type": "user", "uuid": uid, "message": {"content": text}}


@pytest.fixture
def disk() -> Iterator[Path]:
    with disks.tmpfs(2 << 20) as point:
        yield point


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob(".*.tmp"))


def write_whole(path: Path, data: bytes) -> None:
    files.write_bytes(path, data)


def write_text(path: Path, data: bytes) -> None:
    atomic_write(path, data.decode("latin-1"))


def write_json(path: Path, data: bytes) -> None:
    update_json(path, lambda old, repair: {"blob": data.decode("latin-1")})


def write_block(path: Path, data: bytes) -> None:
    place_block(path, data.decode("latin-1"))


def read_json_blob(path: Path) -> bytes:
    return str(json.loads(path.read_text(encoding="utf-8"))["blob"]).encode("latin-1")


def read_managed(path: Path) -> bytes:
    return (read_block(path) or "").rstrip("\n").encode("latin-1")


# each writer, and how to read back what it wrote
WRITERS: dict[str, tuple[Callable[[Path, bytes], None], Callable[[Path], bytes]]] = {
    "write_bytes": (write_whole, Path.read_bytes),
    "atomic_write": (write_text, Path.read_bytes),
    "update_json": (write_json, read_json_blob),
    "place_block": (write_block, read_managed),
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_file_rewritten_on_a_disk_filled_at_generated_points_is_old_or_new_never_half(
    disk: Path, writer: str
) -> None:
    rng = random.Random(f"fill-{writer}")
    write, read = WRITERS[writer]
    target = disk / "books" / "file"
    target.parent.mkdir()
    write(target, b"first version")
    refused = landed = 0
    for _ in range(120):
        before = target.read_bytes()
        disks.fill(disk, leave=rng.choice((0, 1, 512, 4096, 1 << 18, rng.randrange(1 << 19))))
        data = bytes(rng.randrange(32, 127) for _ in range(rng.randrange(1, 1 << 17)))
        try:
            write(target, data)
        except DiskFault as fault:
            refused += 1
            assert fault.errno == errno.ENOSPC and fault.folder == target.parent
            assert str(target.parent) in fault.line() and "磁盘满了" in fault.line()
            assert target.read_bytes() == before  # the old file, untouched
        else:
            landed += 1
            assert read(target) == data
        assert leftovers(disk) == []
        disks.free(disk)
    assert refused > 15 and landed > 15  # both outcomes were really exercised


def test_an_append_that_does_not_fit_is_cut_back_to_the_old_end(disk: Path) -> None:
    rng = random.Random("append")
    log = disk / "问答记录.md"
    files.append_text(log, "## q1\n", header="# 问答记录")
    refused = 0
    for n in range(80):
        before = log.read_bytes()
        disks.fill(disk, leave=rng.randrange(1 << 14))
        entry = f"## q{n}\n" + "答" * rng.randrange(1, 1 << 14)
        try:
            files.append_text(log, entry)
        except DiskFault:
            refused += 1
            assert log.read_bytes() == before
        else:
            assert log.read_bytes() == before + ("\n" + entry).encode("utf-8")
        disks.free(disk)
    assert refused > 10


def test_a_read_only_disk_refuses_with_erofs_and_keeps_the_file(disk: Path) -> None:
    target = disk / "lineage.json"
    atomic_write(target, '{"a": 1}')
    disks.remount(disk, read_only=True)
    try:
        with pytest.raises(DiskFault) as caught:
            atomic_write(target, '{"a": 2}')
    finally:
        disks.remount(disk, read_only=False)
    assert caught.value.errno == errno.EROFS and "只读" in caught.value.line()
    assert json.loads(target.read_text()) == {"a": 1}


def test_an_immutable_folder_refuses_even_root_with_eperm(disk: Path) -> None:
    folder = disk / "notes"
    folder.mkdir()
    atomic_write(folder / "需求.md", "old")
    assert disks.immutable(folder)
    try:
        with pytest.raises(DiskFault) as caught:
            atomic_write(folder / "需求.md", "new")
    finally:
        disks.immutable(folder, on=False)
    assert caught.value.errno == errno.EPERM and caught.value.folder == folder
    assert (folder / "需求.md").read_text() == "old" and leftovers(folder) == []


def test_a_writer_without_permission_gets_eacces_in_one_line(disk: Path) -> None:
    # root ignores permission bits: the writer is a real unprivileged process (a fork that drops
    # to nobody, flower already loaded in it)
    target = disk / "manifest.json"
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.setgid(65534)
            os.setuid(65534)
            try:
                atomic_write(target, "[]")
                said = "written"
            except DiskFault as fault:
                said = f"{fault.code}|{fault.folder}|{fault.line()}"
            os.write(write_end, said.encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        said = fh.read().decode()
    os.waitpid(pid, 0)
    code_name, folder, line = said.split("|")
    assert code_name == "EACCES" and folder == str(disk) and "没有写权限" in line
    assert not target.exists() and leftovers(disk) == []


def test_a_folder_that_vanished_is_a_fault_and_is_not_made_anew(disk: Path) -> None:
    run_dir = disk / "runs"
    run_dir.mkdir()
    os.rename(run_dir, disk / "runs.away")
    with pytest.raises(DiskFault) as caught:
        files.write_bytes(run_dir / "manifest.json", b"[]", parents=False)
    assert caught.value.errno == errno.ENOENT and caught.value.folder == run_dir
    assert "不见了" in caught.value.line() and not run_dir.exists()


def test_sqlite_refusals_are_named_as_the_disk_faults_they_are(disk: Path) -> None:
    store = SqliteSessionStore(disk / "runs" / "sessions.db")
    try:
        store.add(KEY, [entry("u0", "x")])
        disks.fill(disk)
        with pytest.raises(DiskFault) as caught:
            for n in range(1, 400):
                store.add(KEY, [entry(f"u{n}", "y" * 4000)])
        assert caught.value.errno == errno.ENOSPC and store.fault is caught.value
        assert caught.value.folder == disk / "runs"
    finally:
        disks.free(disk)
        store.close()
    conn = sqlite3.connect(disk / "runs" / "sessions.db")
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()


def test_a_store_whose_folder_was_moved_away_refuses_instead_of_writing_into_the_void(disk: Path) -> None:
    store = SqliteSessionStore(disk / "runs" / "sessions.db")
    try:
        store.add(KEY, [entry("u0", "x")])
        os.rename(disk / "runs", disk / "runs.away")
        with pytest.raises(DiskFault) as caught:
            store.add(KEY, [entry("u1", "x")])
        assert caught.value.errno == errno.ENOENT and caught.value.folder == disk / "runs"
        assert not (disk / "runs").exists()
    finally:
        store.close()


def test_sqlite_errors_that_are_no_resource_fault_stay_what_they_are(tmp_path: Path) -> None:
    assert fault_of(sqlite3.IntegrityError("UNIQUE constraint failed"), tmp_path / "x.db") is None
    assert fault_of(FileNotFoundError(2, "gone", str(tmp_path / "file")), tmp_path / "file") is None
    assert fault_of(IsADirectoryError(21, "dir", str(tmp_path)), tmp_path) is None


# -- free space --------------------------------------------------------------------------------------


def test_free_space_warns_below_the_threshold_and_stops_below_the_floor(
    disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(files.DISK_WARN_VAR, "1.5")
    monkeypatch.setenv(files.DISK_FLOOR_VAR, "0.5")
    [space] = free_space([disk / "runs", disk / "not-made-yet" / "spill"])  # one filesystem, once
    assert not space.low
    disks.fill(disk, leave=1 << 20)
    [space] = free_space([disk / "runs"])
    assert space.low and not space.exhausted and "FLOWER_DISK_WARN_MB" in space.line()
    disks.free(disk)
    disks.fill(disk, leave=100 << 10)
    [space] = free_space([disk / "runs"])
    assert space.exhausted and "没花钱" in space.line() and str(disk / "runs") in space.line()


# -- spills --------------------------------------------------------------------------------------------


def test_a_spill_cut_short_or_foreign_is_written_again_never_trusted(tmp_path: Path) -> None:
    text = "line of output\n" * 5000
    path = _spill(tmp_path, text)
    assert path is not None and path.read_text() == text
    for bad in (text.encode()[:65536], b"", b"someone else's file" * 3000):
        path.write_bytes(bad)
        again = _spill(tmp_path, text)
        assert again == path and path.read_text() == text


async def test_a_spill_the_disk_refuses_leaves_the_output_as_it_was_and_says_so(disk: Path) -> None:
    wb = Workbench(disk / "ws", home=disk / "wb")
    wb.ensure()
    heard: list[tuple[OSError, Path]] = []
    guard = spill_guard(wb, threshold=100, on_fault=lambda exc, path: heard.append((exc, path)))
    disks.fill(disk)
    try:
        data: Any = {
            "tool_name": "Bash",
            "tool_input": {"command": "seq 1 90000"},
            "tool_response": {"stdout": "\n".join(map(str, range(90000))), "stderr": ""},
            "cwd": str(wb.workspace),
        }
        out: Any = await guard.hooks[0](data, "t1", cast(Any, None))
    finally:
        disks.free(disk)
    assert out == {}  # no pointer to a file that could not be kept: the result goes through whole
    [(fault, where)] = heard
    assert isinstance(fault, DiskFault) and fault.errno == errno.ENOSPC and where.parent == wb.root / "spill"
    assert list((wb.root / "spill").glob("*.txt")) == [] and leftovers(disk) == []


SPILLER = textwrap.dedent(
    """
    import random, sys
    from pathlib import Path
    from flower.core.guard import _spill
    rng = random.Random(int(sys.argv[2]))
    texts = [str(n) * (200_000 + n) for n in range(6)]
    print("ready", flush=True)
    while True:
        _spill(Path(sys.argv[1]), rng.choice(texts))
        for p in Path(sys.argv[1]).glob("*.txt"):
            p.unlink(missing_ok=True)  # written again and again: the kill lands mid-write
    """
)


def test_a_spill_killed_at_random_points_is_never_trusted_half_written(tmp_path: Path) -> None:
    rng = random.Random("kill-spill")
    spill_dir = tmp_path / "spill"
    texts = [str(n) * (200_000 + n) for n in range(6)]
    for round_no in range(25):
        child = subprocess.Popen(
            [sys.executable, "-c", SPILLER, str(spill_dir), str(round_no)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + rng.uniform(0.0, 0.3)
        while time.monotonic() < deadline and child.poll() is None:
            pass  # a random point of the writing loop
        child.send_signal(signal.SIGKILL)
        child.wait(60)
        for path in spill_dir.glob("*.txt"):  # what a kill left under a spill's name
            assert hashlib.sha256(path.read_bytes()).hexdigest()[:16] == path.stem
        for text in texts:  # the next identical output is pointed only at its whole text
            spilled = _spill(spill_dir, text)
            assert spilled is not None and spilled.read_text() == text


@pytest.mark.parametrize(
    ("err", "says"),
    [
        (errno.ENOSPC, "磁盘满了"),
        (errno.EDQUOT, "配额"),
        (errno.EROFS, "只读"),
        (errno.EACCES, "权限"),
        (errno.EPERM, "不可改"),
    ],
)
def test_every_resource_errno_is_one_fault_that_names_the_folder_and_the_fix(
    tmp_path: Path, err: int, says: str
) -> None:
    target = tmp_path / "notes" / "目标.md"
    target.parent.mkdir()
    fault = fault_of(OSError(err, os.strerror(err), str(target.parent / ".目标.md.x.tmp")), target)
    assert isinstance(fault, DiskFault) and fault.errno == err and fault.folder == target.parent
    line = fault.line()
    assert says in line and str(target.parent) in line and "再跑一次 flower" in line and "\n" not in line
    again = pickle.loads(pickle.dumps(fault))  # crosses processes like any OSError
    assert isinstance(again, DiskFault) and again.line() == line


def test_explaining_a_fault_on_a_name_the_os_cannot_look_at_raises_nothing(tmp_path):
    # a folder name over NAME_MAX: even stat() fails with ENAMETOOLONG, and the explanation of the
    # first error must not become a second, unexplained one
    long = tmp_path / ("花" * 90) / "x"
    with pytest.raises(OSError) as caught:
        long.mkdir(parents=True)
    assert caught.value.errno == errno.ENAMETOOLONG
    assert fault_of(caught.value, long) is None
    line = unwritable(caught.value, long)
    assert "File name too long" in line and "\n" not in line
