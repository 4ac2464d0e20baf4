"""Checkpoints: the workspace's files at every round boundary, kept in the run folder.

A checkpoint is a list of the workspace's files (path -> content hash, size, mode) written as
`<run_dir>/checkpoints/cp-<seq>.json`; the contents are blobs named by their SHA-256 under
`checkpoints/blobs/`, so a file that did not change since the last checkpoint costs nothing
more, and a file unchanged in size and modification time is not even read again.

Nothing is ever written into the person's repository: a repository's files are listed with
`git ls-files` (read-only: no index refresh, GIT_OPTIONAL_LOCKS=0); a folder that is none is
listed through an empty git folder of flower's own in the run folder, so `.gitignore` counts
there the same way. flower's own folders (`.flower`, the run folder) and `.git` never count.

Files over the per-file limit, those that would pass the per-run limit and `.env` files
(credentials never leave the place they are kept in) are recorded as skipped, with why.

Checkpoints form a line: each names its parent; `head.json` names the newest one of the line the
workspace is on now. A rewind moves the head back; the later checkpoints stay (a branch).
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import stat
import subprocess
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypedDict

from ..base.files import faults, write_bytes
from ..base.i18n import _
from ..base.loose import mapping
from .rundir import read_json, run_dir_lock

if TYPE_CHECKING:
    from .shared import SharedRun

FOLDER = "checkpoints"
HEAD = "head.json"
SCAN_GIT = "scan.git"  # an empty git folder of flower's own: .gitignore rules for a plain folder
MB = 1024 * 1024
FILE_LIMIT = 20 * MB
RUN_LIMIT = 2048 * MB
FULL_EVERY = 16  # a checkpoint's list is a change to its parent's, and whole every so many
ALWAYS_OUT = (".git", ".flower")  # never a workspace file: the repository's own, flower's own

Phase = Literal["before", "after", "end", "rewind", "fork"]


class EntryRecord(TypedDict, total=False):
    """An Entry as a checkpoint file keeps it: its empty and zero fields left out."""

    sha: str
    size: int
    mode: int
    mtime_ns: int
    link: str


class CheckpointRecord(TypedDict):
    """A Checkpoint as a checkpoint file keeps it (a delta file keeps `changed`, `removed`,
    `delta_of` and `depth` in place of `files`)."""

    seq: int
    round: int
    phase: str
    parent: int | None
    step: str
    flow: str
    session: str
    at: str
    files: dict[str, EntryRecord]
    skipped: dict[str, str]
    created: float
    added_bytes: int


def _limit(var: str, default: int) -> int:
    try:
        value = int(os.environ.get(var, ""))
    except ValueError:
        return default
    return value * MB if value > 0 else default


@dataclass(frozen=True)
class Entry:
    """One file of a checkpoint: its content's hash, size, permission bits, modification time;
    `link` for a symbolic link (its target; no content)."""

    sha: str = ""
    size: int = 0
    mode: int = 0o644
    mtime_ns: int = 0
    link: str = ""

    def same(self, other: Entry | None) -> bool:
        """Whether `other` holds the same thing (content, link, executable bit)."""
        return (
            other is not None
            and self.sha == other.sha
            and self.link == other.link
            and (self.mode & 0o111) == (other.mode & 0o111)
        )

    def record(self) -> EntryRecord:
        out: EntryRecord = {}
        if self.sha:
            out["sha"] = self.sha
        if self.size:
            out["size"] = self.size
        if self.mode:
            out["mode"] = self.mode
        if self.mtime_ns:
            out["mtime_ns"] = self.mtime_ns
        if self.link:
            out["link"] = self.link
        return out

    @classmethod
    def of(cls, data: object) -> Entry:
        """An entry as a checkpoint file keeps it. A key it does not know, or a value of the wrong
        type, is a damaged checkpoint (TypeError): said when it is read, not a crash at restore."""
        raw = _object(data, "a checkpoint entry")
        unknown = sorted(set(raw) - _ENTRY_KEYS)
        if unknown:
            raise TypeError(f"a checkpoint entry has unknown keys: {unknown}")
        return cls(
            sha=_text(raw, "sha"),
            size=_count(raw, "size", 0),
            mode=_count(raw, "mode", 0o644),
            mtime_ns=_count(raw, "mtime_ns", 0),
            link=_text(raw, "link"),
        )


@dataclass
class Checkpoint:
    seq: int
    round: int
    phase: str
    parent: int | None = None
    step: str = ""
    flow: str = ""
    session: str = ""  # the step's session at this point
    at: str = ""  # the last transcript entry of that session at this point
    files: dict[str, Entry] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # path -> why it was not kept
    created: float = 0.0
    added_bytes: int = 0  # what this checkpoint added to the blobs
    depth: int = field(default=0, compare=False)  # changes since the last whole list (on disk)

    def record(self) -> CheckpointRecord:
        # in the fields' order: the same checkpoint is the same bytes on disk
        return {
            "seq": self.seq,
            "round": self.round,
            "phase": self.phase,
            "parent": self.parent,
            "step": self.step,
            "flow": self.flow,
            "session": self.session,
            "at": self.at,
            "files": {p: e.record() for p, e in self.files.items()},
            "skipped": dict(self.skipped),
            "created": self.created,
            "added_bytes": self.added_bytes,
        }

    @classmethod
    def of(cls, data: object) -> Checkpoint:
        """A checkpoint as its file (or a rewind's journal) keeps it; a damaged one raises
        (KeyError, TypeError, ValueError)."""
        if not isinstance(data, dict):
            raise ValueError("a checkpoint is a JSON object")
        raw = mapping(data)
        parent = raw.get("parent")
        return cls(
            seq=_int(raw["seq"]),
            round=_int(raw["round"]),
            phase=str(raw["phase"]),
            parent=None if parent is None else _int(parent),
            step=str(raw.get("step", "")),
            flow=str(raw.get("flow", "")),
            session=str(raw.get("session", "")),
            at=str(raw.get("at", "")),
            files={p: Entry.of(e) for p, e in _object(raw.get("files", {}), "files").items()},
            skipped={k: str(v) for k, v in _object(raw.get("skipped", {}), "skipped").items()},
            created=_float(raw.get("created", 0.0)),
            added_bytes=_int(raw.get("added_bytes", 0)),
        )


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be read or used; the message is the one line for a person."""


class Checkpoints:
    """The checkpoints of one workspace, kept in `<run_dir>/checkpoints/`."""

    def __init__(
        self,
        run_dir: str | Path,
        workspace: str | Path,
        *,
        file_limit: int | None = None,
        run_limit: int | None = None,
    ) -> None:
        self.run_dir = Path(run_dir).expanduser().resolve()
        self.workspace = Path(workspace).expanduser().resolve()
        self.root = self.run_dir / FOLDER
        self.file_limit = (
            file_limit if file_limit is not None else _limit("FLOWER_CHECKPOINT_FILE_MB", FILE_LIMIT)
        )
        self.run_limit = run_limit if run_limit is not None else _limit("FLOWER_CHECKPOINT_RUN_MB", RUN_LIMIT)
        self.said = False  # the line about skipped files was said in this process
        self._loaded: dict[int, Checkpoint] = {}  # a checkpoint never changes once written
        # the shared store's books of this work (core/shared.py), whose lineage a rewind moves
        self.shared: SharedRun | None = None

    # -- reading ---------------------------------------------------------------------------
    def path_of(self, seq: int) -> Path:
        return self.root / f"cp-{seq:06d}.json.gz"

    def _seqs(self) -> list[int]:
        if not self.root.is_dir():
            return []
        return sorted(int(p.name[3:9]) for p in self.root.glob("cp-*.json.gz") if p.name[3:9].isdigit())

    def blob_path(self, sha: str) -> Path:
        return self.root / "blobs" / sha[:2] / sha

    def _head_data(self) -> dict[str, object]:
        try:
            data: object = read_json(self.root / HEAD)
        except (OSError, ValueError):
            return {}
        return mapping(data)

    def head_seq(self) -> int | None:
        seq = self._head_data().get("head")
        return seq if isinstance(seq, int) else None

    def stored_bytes(self) -> int:
        value = self._head_data().get("stored", 0)
        return value if isinstance(value, int) else 0

    def load(self, seq: int) -> Checkpoint:
        if seq in self._loaded:
            return self._loaded[seq]
        try:
            data: object = json.loads(gzip.decompress(self.path_of(seq).read_bytes()))
            record = mapping(data)
            base = record.get("delta_of")
            if isinstance(base, int) and base < seq:
                files: dict[str, object] = {p: asdict(e) for p, e in self.load(base).files.items()}
                files.update(_object(record.pop("changed", {}), "changed"))
                removed = record.pop("removed", [])
                if not isinstance(removed, list):
                    raise TypeError("removed is not a JSON array")
                for rel in removed:
                    if not isinstance(rel, str):
                        raise TypeError(f"removed holds a path that is not text: {rel!r}")
                    files.pop(rel, None)
                record["files"] = files
                data = record
            cp = Checkpoint.of(data)
            cp.depth = _int(record.get("depth", 0))
        except (OSError, ValueError, KeyError, TypeError, EOFError) as exc:
            raise CheckpointError(
                _("检查点 {seq} 读不出来({why}):{path}").format(seq=seq, why=exc, path=self.path_of(seq))
            ) from None
        self._loaded[seq] = cp
        return cp

    def head(self) -> Checkpoint | None:
        seq = self.head_seq()
        return self.load(seq) if seq is not None else None

    def line(self) -> list[Checkpoint]:
        """The head and its ancestors, newest first: the history the workspace is on now."""
        found: list[Checkpoint] = []
        seq = self.head_seq()
        seen: set[int] = set()
        while seq is not None and seq not in seen:
            seen.add(seq)
            cp = self.load(seq)
            found.append(cp)
            seq = cp.parent
        return found

    def all(self) -> list[Checkpoint]:
        """Every checkpoint kept, of every branch, oldest first."""
        return [self.load(seq) for seq in self._seqs()]

    def at_round(self, round_no: int) -> Checkpoint | None:
        """The checkpoint after round `round_no`'s verdict on the current line (the newest)."""
        for cp in self.line():
            if cp.round == round_no and cp.phase == "after":
                return cp
        return None

    def rounds(self) -> list[int]:
        return sorted({cp.round for cp in self.line() if cp.phase == "after"})

    def blob(self, sha: str) -> bytes:
        """A blob's bytes, checked against its name: a damaged one is said, never restored."""
        path = self.blob_path(sha)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CheckpointError(_("检查点缺了一份内容 {path}:{why}").format(path=path, why=exc)) from None
        if hashlib.sha256(data).hexdigest() != sha:
            raise CheckpointError(_("检查点里的一份内容坏了:{path}").format(path=path))
        return data

    # -- the workspace now -------------------------------------------------------------------
    def _excluded(self) -> tuple[str, ...]:
        out = list(ALWAYS_OUT)
        if self.run_dir.is_relative_to(self.workspace) and self.run_dir != self.workspace:
            out.append(self.run_dir.relative_to(self.workspace).as_posix())
        return tuple(out)

    def listed(self) -> list[str]:
        """The workspace's files as git sees them, .gitignore honoured; relative POSIX paths."""
        out = self._excluded()
        names = self._git_listing()
        if names is None:
            names = list(self._walk())
        return sorted(
            {
                n
                for n in names
                if n and not n.endswith("/") and not any(n == o or n.startswith(o + "/") for o in out)
            }
        )

    def _git_listing(self) -> list[str] | None:
        env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
        for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
            env.pop(var, None)
        if in_repository(self.workspace):
            cmd = [
                "git",
                "-C",
                str(self.workspace),
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ]
        else:
            scan = self.root / SCAN_GIT
            if not (scan / "HEAD").exists():
                self.root.mkdir(parents=True, exist_ok=True)
                try:
                    made = subprocess.run(
                        ["git", "init", "-q", "--bare", str(scan)], capture_output=True, env=env, timeout=60
                    )
                except (OSError, subprocess.SubprocessError):
                    return None
                if made.returncode != 0:
                    return None
            cmd = [
                "git",
                f"--git-dir={scan}",
                f"--work-tree={self.workspace}",
                "-c",
                "core.bare=false",
                "ls-files",
                "-z",
                "--others",
                "--exclude-standard",
            ]
        try:
            done = subprocess.run(cmd, capture_output=True, env=env, timeout=300, cwd=self.workspace)
        except (OSError, subprocess.SubprocessError):
            return None
        if done.returncode != 0:
            return None
        return [os.fsdecode(n) for n in done.stdout.split(b"\0") if n]

    def _walk(self) -> Iterator[str]:
        """Without git: every file, flower's folders and .git left out (no .gitignore then)."""
        for folder, dirs, files in os.walk(self.workspace):
            rel = Path(folder).relative_to(self.workspace)
            dirs[:] = [d for d in dirs if d not in ALWAYS_OUT]
            for name in files:
                yield (rel / name).as_posix()

    def scan(
        self, previous: Checkpoint | None = None
    ) -> tuple[dict[str, Entry], dict[str, str], dict[str, Path]]:
        """(the files now, the skipped ones with why, the files whose content is new: path -> file).

        A file unchanged in size and modification time since `previous` keeps its entry unread.
        """
        before = previous.files if previous is not None else {}
        files: dict[str, Entry] = {}
        skipped: dict[str, str] = {}
        fresh: dict[str, Path] = {}
        for rel in self.listed():
            path = self.workspace / rel
            try:
                st = path.lstat()
            except OSError:
                continue  # listed, then gone (a tracked file deleted): not there now
            if stat.S_ISLNK(st.st_mode):
                files[rel] = Entry(link=os.readlink(path), mode=0o777)
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            if _credentials(rel):
                skipped[rel] = "env"
                continue
            if st.st_size > self.file_limit:
                skipped[rel] = "size"
                continue
            old = before.get(rel)
            mode = stat.S_IMODE(st.st_mode)
            if old is not None and not old.link and old.size == st.st_size and old.mtime_ns == st.st_mtime_ns:
                files[rel] = Entry(sha=old.sha, size=old.size, mode=mode, mtime_ns=old.mtime_ns)
                continue
            try:
                sha = _hash(path)
            except OSError:
                continue  # unreadable: not a file flower can give back
            files[rel] = Entry(sha=sha, size=st.st_size, mode=mode, mtime_ns=st.st_mtime_ns)
            fresh[rel] = path
        return files, skipped, fresh

    # -- writing -------------------------------------------------------------------------------
    def take(
        self,
        *,
        round_no: int,
        phase: Phase,
        step: str = "",
        flow: str = "",
        session: str = "",
        at: str = "",
    ) -> Checkpoint:
        """Record the workspace as it is now, after the head; the new checkpoint (now the head)."""
        with run_dir_lock(self.run_dir):
            head = self.head()
            files, skipped, fresh = self.scan(head)
            stored = self.stored_bytes()
            added = 0
            for rel, path in fresh.items():
                entry = files[rel]
                target = self.blob_path(entry.sha)
                if target.exists():
                    continue
                if stored + added + entry.size > self.run_limit:
                    del files[rel]
                    skipped[rel] = "run"
                    continue
                try:
                    data = path.read_bytes()
                except OSError:
                    del files[rel]
                    continue
                if hashlib.sha256(data).hexdigest() != entry.sha:  # changed while read: hash what is kept
                    entry = replace_sha(entry, data)
                    files[rel] = entry
                    target = self.blob_path(entry.sha)
                # blobs are checked on every read, so one lost in a power cut is said, not restored
                write_bytes(target, data, durable=False, mode=0o600)
                added += len(data)
            cp = Checkpoint(
                seq=self._next_seq(),
                round=round_no,
                phase=phase,
                parent=head.seq if head is not None else None,
                step=step,
                flow=flow or (head.flow if head is not None else ""),
                session=session,
                at=at,
                files=files,
                skipped=skipped,
                created=time.time(),
                added_bytes=added,
            )
            self.write(cp)
            self.set_head(cp.seq, stored=stored + added)
            return cp

    def store_blob(self, data: bytes) -> str:
        """Keep `data` as a blob (once); its hash."""
        sha = hashlib.sha256(data).hexdigest()
        if not self.blob_path(sha).exists():
            write_bytes(self.blob_path(sha), data, mode=0o600)
        return sha

    def write(self, cp: Checkpoint) -> None:
        full = cp.record()
        record: dict[str, object] = dict(full)
        parent = self.load(cp.parent) if cp.parent is not None and self.path_of(cp.parent).exists() else None
        if parent is not None and parent.depth + 1 < FULL_EVERY:
            # only what changed since the parent: ten thousand unchanged files cost nothing again
            files, old = full["files"], parent.record()["files"]
            del record["files"]
            record["changed"] = {p: e for p, e in files.items() if old.get(p) != e}
            record["removed"] = sorted(set(old) - set(files))
            record["delta_of"] = parent.seq
            record["depth"] = cp.depth = parent.depth + 1
        data = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        # mtime=0: the same checkpoint is the same bytes (a replayed journal writes it again)
        write_bytes(self.path_of(cp.seq), gzip.compress(data, compresslevel=6, mtime=0))
        self._loaded[cp.seq] = cp

    def set_head(self, seq: int, *, stored: int | None = None) -> None:
        data = {"head": seq, "stored": self.stored_bytes() if stored is None else stored}
        write_bytes(self.root / HEAD, json.dumps(data).encode("utf-8"))

    def _next_seq(self) -> int:
        return max(self._seqs(), default=0) + 1

    def next_round(self) -> int:
        """The number the next judged round gets on the current line."""
        head = self.head()
        if head is None:
            return 1
        return head.round + 1 if head.phase in ("after", "end", "rewind", "fork") else head.round

    def skipped_line(self, cp: Checkpoint) -> str | None:
        """One line for the files this checkpoint could not keep; None when it kept all."""
        if not cp.skipped:
            return None
        names = sorted(cp.skipped)
        shown = _("、").join(names[:3]) + (_(" 等") if len(names) > 3 else "")
        return _(
            "检查点没存 {n} 个文件({shown}):太大、超了这次运行的总量,或是 .env;退回时它们保持原样"
        ).format(n=len(names), shown=shown)


_ENTRY_KEYS = frozenset(f.name for f in fields(Entry))


def _object(value: object, what: str) -> dict[str, object]:
    """A JSON object; anything else is a damaged checkpoint (TypeError)."""
    if not isinstance(value, dict):
        raise TypeError(f"{what} is not a JSON object")
    return mapping(value)


def _text(raw: dict[str, object], key: str) -> str:
    value = raw.get(key, "")
    if not isinstance(value, str):
        raise TypeError(f"{key} is not text: {value!r}")
    return value


def _count(raw: dict[str, object], key: str, default: int) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{key} is not a whole number: {value!r}")
    return value


def _int(value: object) -> int:
    """int() of a JSON value (a number or a numeral, as before these were typed); else TypeError."""
    if isinstance(value, (str, int, float)):
        return int(value)
    raise TypeError(f"not a number: {value!r}")


def _float(value: object) -> float:
    if isinstance(value, (str, int, float)):
        return float(value)
    raise TypeError(f"not a number: {value!r}")


def replace_sha(entry: Entry, data: bytes) -> Entry:
    return Entry(sha=hashlib.sha256(data).hexdigest(), size=len(data), mode=entry.mode, mtime_ns=0)


def _credentials(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return name == ".env" or (name.startswith(".env.") and not name.endswith((".example", ".sample")))


def _hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(MB), b""):
            digest.update(chunk)
    return digest.hexdigest()


def in_repository(path: Path) -> bool:
    """Whether `path` is inside a git work tree (read-only question)."""
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE")}
    try:
        done = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "--is-inside-work-tree"],
            capture_output=True,
            text=True,
            timeout=30,
            env={**env, "GIT_OPTIONAL_LOCKS": "0"},
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and done.stdout.strip() == "true"


def restore_file(store: Checkpoints, rel: str, entry: Entry | None) -> None:
    """Make the workspace's `rel` what `entry` says (None: no such file), atomically per file."""
    path = store.workspace / rel
    with faults(path):
        if entry is None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            _prune_empty(path.parent, store.workspace)
            return
        if entry.link:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            path.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(entry.link, path)
            return
        if path.is_symlink():
            path.unlink()
        write_bytes(path, store.blob(entry.sha), mode=entry.mode, durable=False)


def _prune_empty(folder: Path, top: Path) -> None:
    while folder != top and folder.is_relative_to(top):
        try:
            folder.rmdir()  # only an empty folder goes
        except OSError:
            return
        folder = folder.parent


__all__ = [
    "Checkpoint",
    "CheckpointError",
    "Checkpoints",
    "Entry",
    "in_repository",
    "restore_file",
]
