"""The one write path: every file flower keeps is written here, and every way a disk can refuse
a write ends here as one typed error.

- A whole file (lineage, manifest, documents, INDEX.md, the handover block, spills, archives)
  is written to a temporary file in the same folder, fsynced, then renamed over the old one:
  readers, a killed process and a full disk all see the old file or the new one, never half.
  On any failure the temporary file is removed and the old file is untouched.
- An appended log (the question log) is cut back to its old length when an append fails, so a
  half-written entry never stands at its end.
- A content-addressed file (a spill) is trusted only when what is on disk is byte for byte what
  would be written: a file cut short by a kill or a full disk is written again, never reused.
- `ENOSPC`, `EDQUOT`, `EROFS`, `EACCES`/`EPERM`, a folder that vanished, and SQLite's own words
  for them, become a `DiskFault`: it names the folder and the cause in one line a person
  understands, with what to do. It is an OSError, so code that already survives an OSError
  survives it too; code that must stop the run looks for it (`fault_of`).
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from .i18n import N_, _
from .secrets import redact

# errno -> (what happened, what to do), for a person
_CAUSES: dict[int, tuple[str, str]] = {
    errno.ENOSPC: (N_("磁盘满了"), N_("腾出空间后再跑一次 flower,会接着上次")),
    errno.EDQUOT: (N_("磁盘配额用完了"), N_("删掉些文件或者提高配额后再跑一次 flower,会接着上次")),
    errno.EROFS: (
        N_("所在的文件系统是只读的"),
        N_("把它重新挂载成可写的(或者用 -w / -r 换个目录)后再跑一次 flower,会接着上次"),
    ),
    errno.EACCES: (N_("没有写权限"), N_("改好权限(chmod / chown)后再跑一次 flower,会接着上次")),
    errno.EPERM: (N_("不允许写"), N_("去掉文件的不可改属性或改好权限后再跑一次 flower,会接着上次")),
    errno.ENOENT: (
        N_("它不见了(被删掉、挪走或者卸载了)"),
        N_("把它放回原处(重新挂载)后再跑一次 flower,会接着上次"),
    ),
    errno.EIO: (N_("读写出错(设备出了问题)"), N_("检查磁盘或挂载后再跑一次 flower,会接着上次")),
}
FAULT_LINE = N_("没法写进 {folder}:{cause}({code})。{fix}")
# SQLite's result codes for the same causes (sqlite3.Error.sqlite_errorcode, primary code)
_SQLITE_FULL, _SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_CANTOPEN, _SQLITE_PERM = 13, 8, 10, 14, 3

# the free-space check before each step: warn below WARN, stop below FLOOR (megabytes)
DISK_WARN_VAR = "FLOWER_DISK_WARN_MB"
DISK_FLOOR_VAR = "FLOWER_DISK_FLOOR_MB"
DISK_WARN_MB = 500
DISK_FLOOR_MB = 50
LOW_LINE = N_("{folder} 只剩 {free} 可用了(低于 {limit},{var}):满了的话运行会停下")
FLOOR_LINE = N_(
    "{folder} 只剩 {free} 可用,低于 {limit}({var}):这一步没开始,没花钱。腾出空间后再跑一次 flower,会接着上次"
)


class DiskFault(OSError):
    """A write refused by the disk or the folder: full, over quota, read-only, not permitted, gone.

    `folder` is where flower tried to write, `code` the errno name (ENOSPC, EROFS, ...);
    `line()` is what a person is told.
    """

    def __init__(self, err: int, folder: Path, detail: str = "") -> None:
        super().__init__(err, os.strerror(err), str(folder))
        self.folder = Path(folder)
        self.code = errno.errorcode.get(err, str(err))
        self.detail = detail

    def line(self) -> str:
        cause, fix = _CAUSES.get(
            self.errno or 0, (self.strerror or self.code, N_("修好后再跑一次 flower,会接着上次"))
        )
        return _(FAULT_LINE).format(folder=self.folder, cause=_(cause), code=self.code, fix=_(fix))

    def __str__(self) -> str:
        return self.line()

    def __reduce__(self) -> tuple[object, ...]:  # picklable across processes, like any OSError
        return (DiskFault, (self.errno, self.folder, self.detail))


def _stats(path: Path, test: str) -> bool:
    """`path.exists()` / `path.is_dir()` that answer False for a path the OS cannot even look at
    (a name over NAME_MAX, a loop): explaining a fault must never raise one of its own."""
    try:
        return bool(getattr(path, test)())
    except (OSError, ValueError):
        return False


def _folder_of(path: Path) -> Path:
    return path if _stats(path, "is_dir") else path.parent


def diagnose(folder: Path) -> int | None:
    """Why `folder` refuses writes, judged from the filesystem itself; None if nothing is wrong.

    Used when the error does not say (SQLite's "disk I/O error", "unable to open").
    """
    if not _stats(folder, "is_dir"):
        return errno.ENOENT
    try:
        st = os.statvfs(folder)
    except OSError as exc:
        return exc.errno
    if st.f_flag & os.ST_RDONLY:
        return errno.EROFS
    if st.f_bavail * st.f_frsize < 64 * 1024:
        return errno.ENOSPC
    if not os.access(folder, os.W_OK):
        return errno.EACCES
    return None


def fault_of(exc: BaseException, where: str | Path) -> DiskFault | None:
    """The DiskFault an OSError or a sqlite3 error stands for, or None if it is no resource fault.

    `where` is the file (or folder) that was being written: it names the folder.
    """
    if isinstance(exc, DiskFault):
        return exc
    target = Path(getattr(exc, "filename", None) or where) if isinstance(exc, OSError) else Path(where)
    folder = _folder_of(target) if _stats(target, "exists") else target.parent
    if isinstance(exc, OSError):
        err = exc.errno
        if err == errno.ENOENT:
            # a missing file is an ordinary answer; a missing folder to write into is a fault
            return DiskFault(err, _nearest_missing(folder)) if not _stats(folder, "is_dir") else None
        if err in _CAUSES and err != errno.EIO:
            return DiskFault(err, folder)
        if err == errno.EIO:
            return DiskFault(diagnose(folder) or errno.EIO, folder)
        return None
    if isinstance(exc, sqlite3.Error):
        code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
        text = str(exc).lower()
        if code == _SQLITE_FULL or "disk is full" in text:
            return DiskFault(diagnose(folder) or errno.ENOSPC, folder)
        if code in (_SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_CANTOPEN, _SQLITE_PERM) or any(
            w in text for w in ("readonly", "disk i/o error", "unable to open")
        ):
            found = diagnose(folder)
            if found is not None:
                return DiskFault(found, _nearest_missing(folder) if found == errno.ENOENT else folder)
            if code == _SQLITE_READONLY or "readonly" in text:
                return DiskFault(errno.EACCES, folder)
        return None
    return None


def vanished(path: str | Path) -> DiskFault:
    """The fault of a file that is no longer where it was written: its folder (or the outermost
    missing folder above it) is named."""
    return DiskFault(errno.ENOENT, _nearest_missing(Path(path).parent))


def _nearest_missing(folder: Path) -> Path:
    """The outermost folder of `folder`'s path that is gone: the one a person has to put back."""
    missing = folder
    while not _stats(missing.parent, "exists") and missing.parent != missing:
        missing = missing.parent
    return missing


@contextmanager
def faults(where: str | Path) -> Iterator[None]:
    """Raise a resource fault met inside the block as the DiskFault that names `where`'s folder."""
    try:
        yield
    except DiskFault:
        raise
    except (OSError, sqlite3.Error) as exc:
        fault = fault_of(exc, where)
        if fault is None:
            raise
        raise fault from exc


def _fsync_dir(folder: Path) -> None:
    # the rename itself must reach the disk too, or a power cut can bring the old name back
    with suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _plain_mode() -> int:
    """What a plain open() would give a new file: 0666 less the umask (read without changing it)."""
    with suppress(OSError, ValueError):
        for row in Path("/proc/self/status").read_text().splitlines():
            if row.startswith("Umask:"):
                return 0o666 & ~int(row.split()[1], 8)
    return 0o644


def _temp_beside(p: Path, mode: int | None) -> tuple[int, str]:
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    if mode is not None:
        os.fchmod(fd, mode & 0o7777)
    return fd, tmp


def write_bytes(
    path: str | Path, data: bytes, *, parents: bool = True, mode: int | None = None, durable: bool = True
) -> Path:
    """Replace `path` with `data` atomically (temp file in the same folder, fsync, rename).

    `parents`: create missing folders (off for a folder that must already exist: one that
    vanished is then a fault, not silently made anew). `mode`: the new file's permissions
    (None: mkstemp's 0600, or the old file's when one is replaced). Raises DiskFault for a
    resource fault, any other OSError as it is; the old file is untouched either way.
    """
    p = Path(path)
    with faults(p):
        if parents:
            p.parent.mkdir(parents=True, exist_ok=True)
        if mode is None:
            with suppress(OSError):
                mode = p.stat().st_mode  # a rewrite keeps the file's permissions
        fd, tmp = _temp_beside(p, mode if mode is not None else _plain_mode())
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                if durable:
                    os.fsync(fh.fileno())  # ENOSPC of delayed allocation shows here, not later
            os.replace(tmp, p)
        except BaseException:
            with suppress(OSError):
                os.unlink(tmp)
            raise
        if durable:
            _fsync_dir(p.parent)
    return p.resolve()


def atomic_write(
    path: str | Path, text: str, *, durable: bool = True, parents: bool = True, mode: int | None = None
) -> Path:
    """Write `text` (redacted: no credential goes to disk) so that readers see the old file or the
    new one, never half; see write_bytes."""
    return write_bytes(path, redact(text).encode("utf-8"), durable=durable, parents=parents, mode=mode)


def append_text(path: str | Path, text: str, *, header: str = "") -> Path:
    """Append `text` (redacted) to `path`, a blank line between entries, `header` first in a new file.

    A failed append is cut back to the file's old length: no half entry is ever left at its end.
    """
    p = Path(path)
    with faults(p):
        p.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o666)
        try:
            size = os.fstat(fd).st_size
            lead = (f"{header}\n\n" if header else "") if size == 0 else "\n"
            data = (lead + redact(text)).encode("utf-8")
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            except BaseException:
                with suppress(OSError):
                    os.ftruncate(fd, size)
                raise
        finally:
            os.close(fd)
    return p


def move(src: str | Path, dst: str | Path) -> Path:
    """Move `src` to `dst` (missing folders of `dst` made): a rename, or across filesystems a
    whole copy first and the original removed only once the copy stands complete."""
    s, d = Path(src), Path(dst)
    with faults(d):
        d.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(s, d)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            if s.is_dir():
                shutil.copytree(s, d)
                shutil.rmtree(s)
            else:
                write_bytes(d, s.read_bytes(), parents=False, mode=s.stat().st_mode)
                s.unlink()
    return d


def keep_copy(path: str | Path, into: str | Path) -> Path | None:
    """Copy `path` to `<into>/<stem>-<YYYYmmdd-HHMMSS><suffix>` before it is rewritten.

    Never over an earlier copy, and never a partial one: the copy is written whole beside its
    name and then linked to it. None when there is nothing to keep (no file, or an empty one).
    """
    src = Path(path)
    try:
        data = src.read_bytes()
    except OSError:
        return None
    if not data:
        return None
    folder = Path(into)
    base = f"{src.stem}-{time.strftime('%Y%m%d-%H%M%S')}"
    with faults(folder / src.name):
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = _temp_beside(folder / src.name, _plain_mode())
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            target, n = folder / f"{base}{src.suffix}", 1
            while True:
                try:
                    os.link(tmp, target)  # fails if the name is taken: an earlier copy is never replaced
                    break
                except FileExistsError:
                    target = folder / f"{base}-{n}{src.suffix}"
                    n += 1
        finally:
            with suppress(OSError):
                os.unlink(tmp)
    return target


def spill(path: str | Path, data: bytes) -> Path:
    """Make `path` hold exactly `data` (a content-addressed spill file): an existing file is
    reused only when its bytes are `data`'s (a file cut short by a kill or a full disk, or a
    foreign one, is written again), a new one is written atomically. Raises DiskFault or OSError.
    """
    p = Path(path)
    if holds(p, data):
        return p
    return write_bytes(p, data)


def holds(path: Path, data: bytes) -> bool:
    """Whether the file at `path` is exactly `data` (its size first, then its digest)."""
    try:
        if path.stat().st_size != len(data):
            return False
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return False
    return digest.digest() == hashlib.sha256(data).digest()


# -- free space ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Space:
    """Free space where a folder lives, against the thresholds in force."""

    folder: Path
    free: int  # bytes an unprivileged writer may still use
    warn: int
    floor: int

    @property
    def low(self) -> bool:
        return self.free < max(self.warn, self.floor)

    @property
    def exhausted(self) -> bool:
        return self.free < self.floor

    def line(self) -> str:
        if self.exhausted:
            return _(FLOOR_LINE).format(
                folder=self.folder, free=_size(self.free), limit=_size(self.floor), var=DISK_FLOOR_VAR
            )
        return _(LOW_LINE).format(
            folder=self.folder, free=_size(self.free), limit=_size(self.warn), var=DISK_WARN_VAR
        )


class LowSpace(DiskFault):
    """A step that did not start: the free space where the run writes is below the floor."""

    def __init__(self, space: Space) -> None:
        super().__init__(errno.ENOSPC, space.folder)
        self.space = space

    def line(self) -> str:
        return self.space.line()

    def __reduce__(self) -> tuple[object, ...]:
        return (LowSpace, (self.space,))


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MB" if n < 2**30 else f"{n / 2**30:.1f} GB"


def _megabytes(var: str, default: int) -> int:
    try:
        value = float(os.environ.get(var, "") or default)
    except ValueError:
        value = default
    return int(max(value, 0) * 2**20)


def free_space(folders: list[Path]) -> list[Space]:
    """Each filesystem under `folders` once (the first folder that lives there names it), with its
    free space; a folder not made yet is measured where it will be made."""
    warn, floor = _megabytes(DISK_WARN_VAR, DISK_WARN_MB), _megabytes(DISK_FLOOR_VAR, DISK_FLOOR_MB)
    seen: set[int] = set()
    out: list[Space] = []
    for folder in folders:
        at = Path(folder)
        while not _stats(at, "exists") and at.parent != at:
            at = at.parent
        try:
            dev = os.stat(at).st_dev
            st = os.statvfs(at)
        except OSError:
            continue
        if dev in seen or st.f_flag & os.ST_RDONLY:
            continue  # a read-only one is said by the write that fails, with its own fix
        seen.add(dev)
        out.append(Space(Path(folder), st.f_bavail * st.f_frsize, warn, floor))
    return out


__all__ = [
    "DISK_FLOOR_VAR",
    "DISK_WARN_VAR",
    "DiskFault",
    "LowSpace",
    "Space",
    "append_text",
    "atomic_write",
    "diagnose",
    "fault_of",
    "faults",
    "free_space",
    "holds",
    "keep_copy",
    "move",
    "spill",
    "vanished",
    "write_bytes",
]
