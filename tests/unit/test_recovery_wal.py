"""sessions.db is judged the way SQLite judges it: the file as it is, with its WAL. A healthy
store whose pages are still in the -wal (its writer killed mid-checkpoint) is never set aside, a
read-only probe writes no byte beside it, and the salvage of a really damaged store reads the WAL
too. The stores here are made by a real writer process killed with SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

from flower.core.recovery import damaged_store, refill_store, salvage_store, store_damage
from flower.stores.sqlite import SqliteSessionStore

WS_KEY = "-ws"
WRITER = textwrap.dedent(
    """
    import os, signal, sys
    from flower.stores.sqlite import SqliteSessionStore
    db, spec = sys.argv[1], sys.argv[2:]
    store = SqliteSessionStore(db)
    for item in spec:
        if item == "checkpoint":
            store._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            store._conn.execute("PRAGMA wal_autocheckpoint = 0")  # from here on, pages stay in the WAL
            continue
        sid, n = item.split(":")
        for i in range(int(n)):
            store.add({"project_key": "-ws", "session_id": sid},
                      [{"type": "user", "uuid": f"{sid}-{i}", "message": {"content": "x" * 300}}])
    os.kill(os.getpid(), signal.SIGKILL)  # no close, no checkpoint: the WAL stays as it is
    """
)


def killed_writer(db: Path, *spec: str) -> None:
    done = subprocess.run([sys.executable, "-c", WRITER, str(db), *spec], capture_output=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert (db.with_name(db.name + "-wal")).stat().st_size > 0


def partial_checkpoint(db: Path) -> None:
    """What a checkpoint killed after its first page leaves: the main file's page 1 (its header)
    taken from the WAL, so it claims pages the main file does not have yet, while the WAL does."""
    wal = db.with_name(db.name + "-wal").read_bytes()
    page = int.from_bytes(wal[8:12], "big")
    first = None
    for at in range(32, len(wal) - 24 - page + 1, 24 + page):
        if int.from_bytes(wal[at : at + 4], "big") == 1:
            first = wal[at + 24 : at + 24 + page]
    assert first is not None
    with open(db, "r+b") as fh:
        fh.write(first)
    claimed = int.from_bytes(first[28:32], "big") * page
    assert db.stat().st_size < claimed  # the header alone says: cut short


def uuids(db: Path, sid: str) -> set[str]:
    store = SqliteSessionStore(db)
    try:
        return store.uuids({"project_key": WS_KEY, "session_id": sid}) or set()
    finally:
        store.close()


def referenced(run_dir: Path, *sids: str) -> None:
    rows = [{"step": f"s{n}", "run": "r1", "session_id": sid, "started_at": n} for n, sid in enumerate(sids)]
    (run_dir / "manifest.json").write_text(json.dumps(rows), encoding="utf-8")


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def test_a_healthy_store_with_its_pages_in_the_wal_is_not_set_aside(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    killed_writer(db, "s-old:50", "checkpoint", "s-new:400")
    partial_checkpoint(db)
    referenced(tmp_path, "s-old", "s-new")
    before = snapshot(tmp_path)

    assert store_damage(db, in_place=False) is None  # a private copy, judged with its WAL
    assert snapshot(tmp_path) == before  # the read-only judge wrote no byte beside the store
    assert damaged_store(db) is None  # the writer's judge, on the file itself
    assert db.exists() and not list(tmp_path.glob("sessions.db.corrupt-*"))
    assert uuids(db, "s-new") == {f"s-new-{i}" for i in range(400)}
    assert uuids(db, "s-old") == {f"s-old-{i}" for i in range(50)}


def test_the_salvage_of_a_really_damaged_store_recovers_what_is_still_in_the_wal(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    killed_writer(db, "s-old:200", "checkpoint", "s-new:60")
    size = db.stat().st_size
    with open(db, "r+b") as fh:  # a damaged stretch in the middle of the main file
        fh.seek(size // 2)
        fh.write(os.urandom(8192))
    referenced(tmp_path, "s-old", "s-new")

    repair = damaged_store(db)
    assert repair is not None and repair.path == db
    assert repair.backup.with_name(repair.backup.name + "-wal").exists()  # moved along
    fresh = SqliteSessionStore(db)
    try:
        line = refill_store(repair, fresh, WS_KEY)
    finally:
        fresh.close()
    assert uuids(db, "s-new") == {f"s-new-{i}" for i in range(60)}  # every entry that was in the WAL
    assert uuids(db, "s-old") <= {f"s-old-{i}" for i in range(200)}  # what the damage spared
    assert "抢救出" in line and "抢救出 0 个" not in line
    assert not [p for p in tmp_path.iterdir() if ".salvage" in p.name]


def test_salvage_reads_entries_that_only_ever_lived_in_the_wal(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    killed_writer(db, "checkpoint", "s-wal:30")
    copy = tmp_path / "backup.db"
    copy.write_bytes(db.read_bytes())
    copy.with_name(copy.name + "-wal").write_bytes(db.with_name(db.name + "-wal").read_bytes())
    got: dict[str, int] = {}
    assert salvage_store(copy, lambda key, entries: got.__setitem__(key["session_id"], len(entries))) == 1
    assert got == {"s-wal": 30}
    conn = sqlite3.connect(f"{copy.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    try:  # what the old salvage saw: the WAL skipped, not one entry
        assert conn.execute("SELECT count(*) FROM entries").fetchone() == (0,)
    finally:
        conn.close()
