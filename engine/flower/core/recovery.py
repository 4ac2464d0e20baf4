"""What can be rebuilt when a file of a run_dir is damaged, from the files that are not.

- manifest.json: the rows that still parse (each row is a JSON object of its own).
- lineage.json: the step -> session map and the wake count, from the manifest (which gets an
  in-flight row the moment a step's session starts) and checked against sessions.db.
- sessions.db: a file SQLite cannot read is moved aside; whatever rows still read are copied
  into a fresh store, and the transcripts Claude Code keeps on its own fill in the rest.

Damage is what SQLite itself says of the file as it is, with its `-wal` (`PRAGMA quick_check`):
the main file's header alone would call a healthy store cut short while its pages are still in
the WAL. Everything here that only reads (used by read-only probes) never writes a byte beside
the store: it judges a private copy.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.files import write_bytes
from ..base.i18n import N_, _
from ..base.loose import items
from .labels import StepLabel
from .manifest import ManifestRow, looks_like_row, rows_of
from .rundir import Damaged, Repair, read_json, set_aside

if TYPE_CHECKING:
    from claude_agent_sdk.types import SessionKey, SessionStoreEntry

    from ..stores.layer import FlowerStore

MANIFEST = "manifest.json"
STORE = "sessions.db"
SQLITE_MAGIC = b"SQLite format 3\x00"
SQLITE_COMPANIONS = ("-wal", "-shm")
EMPTY_STORE = N_("空文件(0 字节)")


class StoreError(RuntimeError):
    """sessions.db cannot be used as it is; the message says what to do about it."""


# -- the manifest ---------------------------------------------------------------------------------


def manifest_problem(data: object) -> str | None:
    if not isinstance(data, list):
        return _("应该是 JSON 数组,却是{name}").format(name=type(data).__name__)
    bad = sum(1 for row in data if not isinstance(row, dict))
    return _("有 {bad} 行不是 JSON 对象").format(bad=bad) if bad else None


def salvage_rows(text: str) -> list[dict[str, object]]:
    """Every manifest row (a JSON object with `step` and `run`) that still parses, in order, as
    the JSON it is (`salvaged` gives them as rows)."""
    decoder = json.JSONDecoder()
    rows: list[dict[str, object]] = []
    at = text.find("{")
    while at != -1:
        try:
            value, end = decoder.raw_decode(text, at)
        except ValueError:
            at = text.find("{", at + 1)
            continue
        if looks_like_row(value):
            rows.append(value)
            at = text.find("{", end)
        else:
            at = text.find("{", at + 1)
    return rows


def salvaged(text: str) -> list[ManifestRow]:
    """Every manifest row that still parses in `text`, in order."""
    return rows_of(salvage_rows(text))


def read_rows(run_dir: Path) -> tuple[list[ManifestRow], str | None]:
    """(rows, why the file is damaged or None): a damaged manifest yields its salvageable rows."""
    data, problem = read_manifest(run_dir)
    return rows_of(data), problem


def read_manifest(run_dir: Path) -> tuple[list[dict[str, object]], str | None]:
    """(rows as their JSON, why the file is damaged or None): what `read_rows` reads."""
    path = Path(run_dir) / MANIFEST
    try:
        data = read_json(path)
    except Damaged as exc:
        return salvage_rows(_text_of(path)), exc.reason
    except OSError:
        return [], None
    if data is None:
        return [], None
    # with no problem every item is an object already; with one, the objects are what is kept
    return [r for r in items(data) if isinstance(r, dict)], manifest_problem(data)


def rebuilt_rows(repair: Repair) -> list[ManifestRow]:
    """The rows to keep after `repair` moved a damaged manifest aside; says how many in it."""
    rows = salvaged(_text_of(repair.backup))
    repair.recovered = _("读得出的 {rows} 行都留下了").format(rows=len(rows)) if rows else _("一行也读不出来")
    return rows


def rebuilt_manifest(repair: Repair) -> list[dict[str, object]]:
    """`rebuilt_rows` as the JSON they are."""
    return [row.as_json() for row in rebuilt_rows(repair)]


def _text_of(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return ""


def base_step(name: object) -> str | None:
    """The lineage key of a manifest row's step name; None for a side turn of a step: its judge
    rounds (`干活·判定#2`), its handoff (`干活·交接`), its handover to the next tool."""
    return (StepLabel.parse(name).lineage_key or None) if isinstance(name, str) else None


def _typed(rows: Iterable[ManifestRow | dict[str, object]]) -> list[ManifestRow]:
    return [r if isinstance(r, ManifestRow) else ManifestRow.of_json(r) for r in rows]


def sessions_by_step(rows: Iterable[ManifestRow | dict[str, object]]) -> dict[str, str]:
    """The last session each step ran in, by when its row started."""
    latest: dict[str, tuple[float, str]] = {}
    for row in _typed(rows):
        step, sid = row.lineage_key, row.session_id
        if step is None or sid is None:
            continue
        if step not in latest or row.started_at >= latest[step][0]:
            latest[step] = (row.started_at, sid)
    return {step: sid for step, (_, sid) in latest.items()}


def wakes_in(rows: Iterable[ManifestRow | dict[str, object]]) -> int:
    """How many processes left rows: a lower bound of the wake count."""
    return len({r.run for r in _typed(rows) if r.has_run})


# -- the store ------------------------------------------------------------------------------------


def stored_sessions(run_dir: Path, project_key: str) -> set[str] | None:
    """Session ids sessions.db holds for `project_key`, read-only; None if it cannot be read."""
    db = Path(run_dir) / STORE
    if not db.is_file():
        return None
    try:
        with judged_copy(db) as conn:
            rows = conn.execute(
                "SELECT session_id FROM meta WHERE project_key = ? AND subpath = ''", (project_key,)
            ).fetchall()
    except (OSError, sqlite3.Error):
        return None
    return {r[0] for r in rows}


@contextmanager
def judged_copy(db: Path) -> Iterator[sqlite3.Connection]:
    """A connection to a private copy of `db` and its `-wal`, read the way SQLite reads the file
    itself (the WAL's committed pages included) without a byte written beside the original: even
    a read-only connection makes or writes the `-shm` of a WAL database, and `immutable=1`, which
    does not, skips the WAL altogether."""
    with tempfile.TemporaryDirectory(prefix="flower-judge-") as scratch:
        copy = Path(scratch) / db.name
        shutil.copyfile(db, copy)
        wal = db.with_name(db.name + "-wal")
        with suppress(FileNotFoundError):
            shutil.copyfile(wal, copy.with_name(copy.name + "-wal"))
        conn = sqlite3.connect(copy, timeout=5)
        try:
            yield conn
        finally:
            conn.close()


def store_damage(db: Path, *, in_place: bool = True) -> str | None:
    """Why SQLite cannot use sessions.db, or None (also when it does not exist).

    Judged the way SQLite judges it: the file as it is, with its `-wal` (a writer killed before a
    checkpoint leaves its pages there, and the main file alone may look cut short or even empty),
    through `PRAGMA quick_check`. `in_place` opens the file itself (for a writer, which opens it
    next anyway); otherwise a private copy is judged and nothing is written beside it.
    StoreError when it cannot even be looked at.
    """
    try:
        size = db.stat().st_size
        if db.is_dir():
            raise IsADirectoryError(db)
        with open(db, "rb"):
            pass
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise StoreError(
            _("{db} 是个目录,不是会话库:把它挪开(mv {db} {db}.bak),或者用 -r 换一个 run 目录").format(db=db)
        ) from None
    except PermissionError:
        raise StoreError(_("没有权限读 {db}:chmod u+rw {db}(它所在的目录也要可写)").format(db=db)) from None
    wal = db.with_name(db.name + "-wal")
    if size == 0 and not (wal.is_file() and wal.stat().st_size > 0):
        return _(EMPTY_STORE)
    has_wal = wal.is_file() and wal.stat().st_size > 0
    try:
        if has_wal and not in_place:
            with judged_copy(db) as conn:
                verdict = _quick_check(conn)
        else:
            # without a WAL the main file is the whole store: immutable reads it and creates no
            # -shm or -wal beside it; with one, a read-only connection reads its pages too
            mode = "mode=ro" if has_wal else "mode=ro&immutable=1"
            conn = sqlite3.connect(f"{db.resolve().as_uri()}?{mode}", uri=True, timeout=30)
            try:
                verdict = _quick_check(conn)
            finally:
                conn.close()
    except sqlite3.OperationalError:
        return None  # cannot be judged now (locked, no room for a copy): not a verdict of damage
    except sqlite3.DatabaseError as exc:
        return _sqlite_reason(db, size, str(exc))
    except OSError:
        return None
    if verdict is not None and _claimed_size(db) > size:
        return _sqlite_reason(db, size, verdict)
    return verdict


def _quick_check(conn: sqlite3.Connection) -> str | None:
    rows = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
    if rows == ["ok"]:
        return None
    return _("SQLite 自检不通过:{first}").format(first=str(rows[0]) if rows else "?")


def _sqlite_reason(db: Path, size: int, text: str) -> str:
    """A person's words for SQLite's refusal; a cut-off file says how much is left of it."""
    if "not a database" in text:
        return _("不是 SQLite 数据库")
    expected = _claimed_size(db)
    if expected and size < expected:
        return _("被截断了({size} 字节,文件头说该有 {expected} 字节)").format(size=size, expected=expected)
    if size < 100:
        return _("被截断了(只剩 {size} 字节,连文件头都不完整)").format(size=size)
    return _("SQLite 读不了它:{text}").format(text=text)


def _claimed_size(db: Path) -> int:
    try:
        with open(db, "rb") as fh:
            head = fh.read(100)
    except OSError:
        return 0
    if len(head) < 100 or not head.startswith(SQLITE_MAGIC):
        return 0
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    return page * int.from_bytes(head[28:32], "big")


def referenced_sessions(run_dir: Path) -> set[str]:
    """The sessions the lineage and the manifest say the steps ran in."""
    rows, _ = read_rows(run_dir)
    found = set(sessions_by_step(rows).values())
    try:
        data = read_json(Path(run_dir) / "lineage.json")
    except (Damaged, OSError):
        data = None
    steps = data.get("steps") if isinstance(data, dict) else None
    if isinstance(steps, dict):
        found.update(v for v in steps.values() if isinstance(v, str) and v)
    return found


def damaged_store(db: Path) -> Repair | None:
    """Move sessions.db aside if SQLite cannot read it; StoreError if it cannot even be looked at.

    A zero-length file is what SQLite calls an empty database: only when the lineage or the
    manifest say sessions existed is it a loss to report rather than a fresh start.
    """
    reason = store_damage(db)
    if reason is None:
        return None
    if reason == _(EMPTY_STORE) and not referenced_sessions(db.parent):
        return None
    return Repair(db, set_aside(db, companions=SQLITE_COMPANIONS), reason)


def refill_store(repair: Repair, store: FlowerStore, project_key: str) -> str:
    """Copy what still reads from the moved-aside store, then what Claude Code's own transcripts
    hold for the sessions the steps ran in; the one line that says how it went."""
    from .transcripts import catch_up

    salvaged = salvage_store(repair.backup, store.add) if repair.reason != _(EMPTY_STORE) else 0
    wanted = referenced_sessions(repair.path.parent)
    missing = {sid for sid in wanted if not store.has_session(project_key, sid)}
    refilled = 0
    for sid in sorted(missing):
        try:
            if catch_up(store, project_key, sid) and store.has_session(project_key, sid):
                refilled += 1
        except (OSError, sqlite3.Error):
            continue
    still = len(missing) - refilled
    parts = (
        [_("抢救出 {salvaged} 个会话").format(salvaged=salvaged)] if repair.reason != _(EMPTY_STORE) else []
    )
    if refilled:
        parts.append(_("从 Claude Code 自己的记录补回 {refilled} 个").format(refilled=refilled))
    if still:
        parts.append(_("步骤用过的会话还有 {still} 个找不回(那些步骤会开新会话)").format(still=still))
    elif wanted:
        parts.append(_("步骤用过的 {wanted} 个会话一个不缺").format(wanted=len(wanted)))
    repair.recovered = _(",").join(parts) or _("里面没有可找回的会话")
    return repair.line()


def salvage_store(backup: Path, add: Callable[[SessionKey, list[SessionStoreEntry]], object]) -> int:
    """Copy every transcript row that still reads from `backup` through `add(key, entries)`.

    Reads in small slices so one unreadable page costs its slice, not the rest. Returns how
    many main sessions came back with at least one entry.
    """
    readable = _padded_copy(backup)
    try:
        # not immutable: the WAL copied beside it is read, as SQLite reads the original
        conn = sqlite3.connect(readable, timeout=5)
    except sqlite3.Error:
        _drop_copy(readable)
        return 0
    sessions: set[tuple[str, str]] = set()
    try:
        try:
            keys = conn.execute("SELECT id, project_key, session_id, subpath FROM meta").fetchall()
        except sqlite3.Error:
            return 0
        for key_id, project_key, session_id, subpath in keys:
            entries = _readable_entries(conn, key_id)
            if not entries:
                continue
            key: SessionKey = {"project_key": project_key, "session_id": session_id}
            if subpath:
                key["subpath"] = subpath
            add(key, entries)
            if not subpath:
                sessions.add((project_key, session_id))
    finally:
        conn.close()
        _drop_copy(readable)
    return len(sessions)


def _padded_copy(backup: Path) -> Path:
    """A scratch copy of `backup` and its `-wal`, the main file zero-filled up to the size its
    header claims.

    SQLite calls a file shorter than its header says malformed as a whole; padded, every page
    that survived the cut reads again and only the lost ones fail. The WAL holds the pages a
    writer committed after the last checkpoint: without it they would be lost too.
    """
    copy = backup.with_name(backup.name + ".salvage")
    data = backup.read_bytes()
    size = len(data)
    if len(data) >= 100 and data.startswith(SQLITE_MAGIC):
        page = int.from_bytes(data[16:18], "big")
        page = 65536 if page == 1 else page
        size = max(size, page * int.from_bytes(data[28:32], "big"))
    write_bytes(copy, data + bytes(size - len(data)), parents=False, durable=False)
    wal = backup.with_name(backup.name + "-wal")
    if wal.is_file():
        write_bytes(copy.with_name(copy.name + "-wal"), wal.read_bytes(), parents=False, durable=False)
    return copy


def _drop_copy(copy: Path) -> None:
    for suffix in ("", *SQLITE_COMPANIONS):
        copy.with_name(copy.name + suffix).unlink(missing_ok=True)


def _readable_entries(
    conn: sqlite3.Connection, key_id: int, *, slice_rows: int = 200
) -> list[SessionStoreEntry]:
    try:
        bounds = conn.execute("SELECT min(seq), max(seq) FROM entries WHERE key_id = ?", (key_id,)).fetchone()
    except sqlite3.Error:
        bounds = None
    low, high = (bounds or (None, None))[:2]
    if low is None or high is None:
        low, high = 0, _max_seq(conn)
    out: list[SessionStoreEntry] = []
    for start in range(int(low), int(high) + 1, slice_rows):
        try:
            rows = conn.execute(
                "SELECT payload FROM entries WHERE key_id = ? AND seq BETWEEN ? AND ? ORDER BY seq",
                (key_id, start, start + slice_rows - 1),
            ).fetchall()
        except sqlite3.Error:
            continue
        for (payload,) in rows:
            try:
                out.append(json.loads(payload))
            except (TypeError, ValueError):
                continue
    return out


def _max_seq(conn: sqlite3.Connection) -> int:
    try:
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'entries'").fetchone()
    except sqlite3.Error:
        return 0
    return int(row[0]) if row and row[0] else 0


def store_error(db: Path, exc: sqlite3.Error) -> StoreError:
    """A clear message with the fix for a store SQLite refused to open."""
    from ..stores.sqlite import LONGEST_PATH, path_too_long

    text = str(exc)
    size = path_too_long(db)
    if size is not None:
        fix = _(
            "它的路径有 {size} 字节,SQLite 最多只认 {limit} 字节:"
            "用 -r/--run-dir 把 run 目录放到路径短一些的地方"
            "(以后每次都带上同一个 -r),或者把工作区挪到短一些的路径下"
        ).format(size=size, limit=LONGEST_PATH)
    elif "newer than this flower" in text:
        fix = _("它是更新版本的 flower 写的:升级 flower,或者用 -r 换一个 run 目录")
    elif "locked" in text or "busy" in text:
        fix = _("另一个进程一直锁着它:等那个进程结束(或者结束它)再跑")
    elif "readonly" in text or "unable to open" in text or "permission" in text.lower():
        fix = _("检查 {db} 和它所在目录的权限(要可读写),或者用 -r 换一个 run 目录").format(db=db)
    else:
        fix = _(
            "把它挪开(mv {db} {db}.bak)再跑一次,会话会从头开始;Claude Code 自己的记录还在的话会被找回"
        ).format(db=db)
    return StoreError(
        _("打不开会话库 {db}({value}):{fix}").format(db=db, value=text.split(": ", 1)[-1], fix=fix)
    )


__all__ = [
    "StoreError",
    "base_step",
    "damaged_store",
    "manifest_problem",
    "read_manifest",
    "read_rows",
    "rebuilt_manifest",
    "rebuilt_rows",
    "referenced_sessions",
    "refill_store",
    "salvage_rows",
    "salvage_store",
    "salvaged",
    "sessions_by_step",
    "store_damage",
    "store_error",
    "stored_sessions",
    "wakes_in",
]
