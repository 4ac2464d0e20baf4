"""The process that runs one confined command, bounds it, and leaves nothing behind.

``confine`` returns ``[python, -I, -S, -c, <this file's text>, <spec as JSON>]``: the interpreter
runs this text in isolated mode, with no site-packages and no path of the workspace, so nothing a
worker can write decides what it does. It uses the standard library only.

It picks the first mechanism of the spec that works where it runs:

- ``bwrap``: bubblewrap with a root of its own (the system folders and the workspace bound
  read-only, secrets emptied, a private ``/proc``, ``/dev`` and ``/tmp``), new user, pid,
  network, ipc and uts namespaces, no capabilities, no further user namespaces;
- ``overlay`` (the judge): a user and mount namespace of its own, where a size-bounded tmpfs holds
  the upper and work folders of an overlay mounted on the workspace, then bubblewrap as above with
  that overlay bound writable: writes land in memory and vanish with the namespace;
- ``landlock`` (where namespaces cannot be made, as inside the Claude Code CLI's own sandbox):
  the command restricts itself before it starts, with Landlock (read only the system folders, the
  workspace without its secrets, ``/proc``, a few devices; write nothing but ``/dev/null``; no TCP;
  no abstract unix sockets or signals outside, from ABI 6), a seccomp filter (no socket, no chmod,
  chown, utime or xattr change, no truncating open, no SysV IPC, no io_uring, no keyring), no
  capabilities and no new privileges.

In every case: the environment is the spec's allowlist; stdin is ``/dev/null``; CPU time, wall
time and output are bounded (the head and the tail of each stream are passed on, the middle is
counted; past ``stop`` bytes the command is stopped); core dumps are off; the command runs in a
session of its own and, when it ends or is stopped, every process it started is killed (the pid
namespace, or this process as their subreaper). When no mechanism works it runs nothing and exits
126 with the spec's line saying why.
"""

from __future__ import annotations

# Imports kept to what starts fast: this runs once per command (no ctypes.util, tempfile,
# platform or selectors, which pull in subprocess, random and re).
import ctypes
import errno
import json
import os
import resource
import select
import signal
import stat
import struct
import sys
import time

TYPE_CHECKING = False  # typing is not imported at run time: it only slows the start
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import ParamSpec, TypedDict

    _P = ParamSpec("_P")

    class Limits(TypedDict):
        """``confinement.Limits`` as the spec carries it."""

        wall: int
        cpu: int
        head: int
        tail: int
        err_head: int
        err_tail: int
        stop: int
        tmp: int

    class Texts(TypedDict):
        """The lines the supervisor says, in the language flower speaks (``confinement._texts``)."""

        left_out: str
        timeout: str
        flood: str
        cannot: str

    class Spec(TypedDict):
        """What ``confinement.plan`` hands the supervisor, as one JSON argument."""

        role: str
        command: str
        shell: str
        workspace: str
        mechanisms: list[str]
        bwrap: str | None
        binds: list[str]
        read: list[str]
        hidden: list[str]
        env: dict[str, str]
        limits: Limits
        scratch: str
        texts: Texts

# -- the kernel's interfaces ---------------------------------------------------------------

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x10000000, 0x20000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x4000, 0x40000
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP = 1, 24, 38, 22
PR_SET_CHILD_SUBREAPER, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 36, 47, 4
SECCOMP_MODE_FILTER = 2

# Landlock (include/uapi/linux/landlock.h)
LL_EXECUTE, LL_WRITE_FILE, LL_READ_FILE, LL_READ_DIR = 1, 2, 4, 8
LL_FS_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
LL_FILE_RIGHTS = LL_EXECUTE | LL_WRITE_FILE | LL_READ_FILE | (1 << 14) | (1 << 15)
LL_NET_TCP = 3  # bind and connect
LL_SCOPE = 3  # abstract unix sockets and signals
LL_RULE_PATH_BENEATH = 1

ARCHES = {
    # machine: (audit arch, first x32-style number or 0, {syscall: number})
    "x86_64": (
        0xC000003E,
        0x40000000,
        {
            "socket": 41,
            "chmod": 90,
            "fchmod": 91,
            "fchmodat": 268,
            "fchmodat2": 452,
            "chown": 92,
            "fchown": 93,
            "lchown": 94,
            "fchownat": 260,
            "utime": 132,
            "utimes": 235,
            "futimesat": 261,
            "utimensat": 280,
            "setxattr": 188,
            "lsetxattr": 189,
            "fsetxattr": 190,
            "removexattr": 197,
            "lremovexattr": 198,
            "fremovexattr": 199,
            "setxattrat": 463,
            "removexattrat": 466,
            "truncate": 76,
            "creat": 85,
            "openat2": 437,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
            "add_key": 248,
            "request_key": 249,
            "keyctl": 250,
            "shmget": 29,
            "semget": 64,
            "msgget": 68,
            "mq_open": 240,
            "unshare": 272,
            "setns": 308,
            "open": 2,
            "openat": 257,
        },
    ),
    "aarch64": (
        0xC00000B7,
        0,
        {
            "socket": 198,
            "fchmod": 52,
            "fchmodat": 53,
            "fchmodat2": 452,
            "fchownat": 54,
            "fchown": 55,
            "utimensat": 88,
            "setxattr": 5,
            "lsetxattr": 6,
            "fsetxattr": 7,
            "removexattr": 14,
            "lremovexattr": 15,
            "fremovexattr": 16,
            "setxattrat": 463,
            "removexattrat": 466,
            "truncate": 45,
            "openat2": 437,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
            "add_key": 217,
            "request_key": 218,
            "keyctl": 219,
            "shmget": 194,
            "semget": 190,
            "msgget": 186,
            "mq_open": 180,
            "unshare": 97,
            "setns": 268,
            "openat": 56,
        },
    ),
}
O_TRUNC = 0o1000
NR_LANDLOCK = (444, 445, 446)  # create_ruleset, add_rule, restrict_self: the same on every arch

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def landlock_abi() -> int:
    """The Landlock ABI of this kernel, 0 when there is none (or it is disabled)."""
    try:
        abi = _libc.syscall(NR_LANDLOCK[0], None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    except (AttributeError, OSError):
        return 0
    return max(int(abi), 0)


def seccomp_arch() -> str | None:
    """This machine's name in ``ARCHES``, or None when the filter has no table for it."""
    machine = os.uname().machine.lower()
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    return machine if machine in ARCHES else None


def can_unshare(flags: int) -> bool:
    """Whether a child of this process may create these namespaces (bubblewrap needs them)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os._exit(0 if _libc.unshare(ctypes.c_int(flags)) == 0 else 1)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


# -- Landlock ------------------------------------------------------------------------------


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _fs_rights(abi: int) -> int:
    return LL_FS_ABI[max(k for k in LL_FS_ABI if k <= abi)]


class Ruleset:
    """A Landlock ruleset that handles every right this ABI knows and grants only ``allow``."""

    def __init__(self, abi: int) -> None:
        self.abi = abi
        self.handled = _fs_rights(abi)
        fields = [self.handled]
        if abi >= 4:
            fields.append(LL_NET_TCP)
        if abi >= 6:
            fields.append(LL_SCOPE)
        attr = struct.pack(f"{len(fields)}Q", *fields)
        buf = ctypes.create_string_buffer(attr, len(attr))
        self.fd = _check(
            _libc.syscall(NR_LANDLOCK[0], buf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0)),
            "landlock_create_ruleset",
        )

    def allow(self, path: str, rights: int) -> bool:
        """Grant ``rights`` beneath ``path`` (only the file rights for a file); False if absent."""
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            if not os.path.isdir(f"/proc/self/fd/{fd}"):
                rights &= LL_FILE_RIGHTS
            rule = _PathBeneath(rights & self.handled, fd)
            _check(
                _libc.syscall(
                    NR_LANDLOCK[1],
                    ctypes.c_int(self.fd),
                    ctypes.c_int(LL_RULE_PATH_BENEATH),
                    ctypes.byref(rule),
                    ctypes.c_uint32(0),
                ),
                f"landlock_add_rule {path}",
            )
        finally:
            os.close(fd)
        return True

    def restrict(self) -> None:
        _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        _check(
            _libc.syscall(NR_LANDLOCK[2], ctypes.c_int(self.fd), ctypes.c_uint32(0)), "landlock_restrict_self"
        )
        os.close(self.fd)


def grant_view(rules: Ruleset, root: str, hidden: set[str], rights: int) -> None:
    """Grant ``rights`` on ``root`` except on the ``hidden`` entries beneath it: a folder with no
    hidden entry is granted whole, one with some gets its listing and each other entry."""
    if not any(h == root or h.startswith(root + os.sep) for h in hidden):
        rules.allow(root, rights)
        return
    if root in hidden:
        return
    rules.allow(root, LL_READ_DIR)
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    for entry in entries:
        if entry.is_symlink() or entry.path in hidden:
            continue  # a symlink reaches what its target's own rule allows
        if entry.is_dir(follow_symlinks=False):
            grant_view(rules, entry.path, hidden, rights)
        elif entry.is_file(follow_symlinks=False) or _fifo(entry):
            rules.allow(entry.path, rights)


def _fifo(entry: os.DirEntry[str]) -> bool:
    try:
        return stat.S_ISFIFO(entry.stat(follow_symlinks=False).st_mode)
    except OSError:
        return False


# -- seccomp -------------------------------------------------------------------------------


def seccomp_filter(arch: str) -> bytes:
    """A classic BPF program: another architecture is killed, the listed calls fail with EPERM,
    and so does an ``open``/``openat`` asking for ``O_TRUNC`` (Landlock before ABI 3 lets it)."""
    audit, x32, numbers = ARCHES[arch]
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    # (code, where to jump when true, when false, k); a target is "allow", "deny" or 0 (next)
    prog: list[tuple[int, object, object, int]] = [(ld, 0, 0, 4), (jeq, 1, 0, audit)]
    prog += [(ret, 0, 0, 0x80000000), (ld, 0, 0, 0)]  # kill; then the syscall number
    if x32:
        prog.append((jge, "deny", 0, x32))
    prog += [(jeq, "deny", 0, nr) for name, nr in numbers.items() if name not in ("open", "openat")]
    for name, arg in (("open", 1), ("openat", 2)):
        if name in numbers:  # the flags argument's low word, little-endian
            prog += [(jeq, 0, 2, numbers[name]), (ld, 0, 0, 16 + 8 * arg), (jset, "deny", "allow", O_TRUNC)]
    labels = {"allow": len(prog), "deny": len(prog) + 1}
    prog += [(ret, 0, 0, 0x7FFF0000), (ret, 0, 0, 0x00050000 | errno.EPERM)]

    def offset(target: object, at: int) -> int:
        return labels[target] - at - 1 if isinstance(target, str) else int(target)  # type: ignore[call-overload]

    return b"".join(
        struct.pack("HBBI", code, offset(jt, i), offset(jf, i), k) for i, (code, jt, jf, k) in enumerate(prog)
    )


def load_seccomp(program: bytes) -> None:
    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buf = ctypes.create_string_buffer(program, len(program))
    prog = Prog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    _check(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0), "seccomp")


def drop_capabilities() -> None:
    """Empty the bounding set (nothing exec'd gains a capability) and every current set."""
    try:
        with open("/proc/sys/kernel/cap_last_cap") as fh:
            last = int(fh.read())
    except (OSError, ValueError):
        last = 40
    for cap in range(last + 1):
        _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # EPERM without CAP_SETPCAP: nothing to drop
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = struct.pack("Ii", 0x20080522, 0)
    data = ctypes.create_string_buffer(24)
    _libc.capset(ctypes.create_string_buffer(header, 8), data)


# -- namespaces for the overlay ------------------------------------------------------------


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    _check(
        _libc.mount(
            source.encode(),
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data is not None else None,
        ),
        f"mount {fstype or ''} {target}",
    )


def _write(path: str, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def enter_overlay(workspace: str, scratch: str, size: int) -> None:
    """In a new user and mount namespace: the workspace becomes an overlay whose upper and work
    folders live on a tmpfs of ``size`` bytes at ``scratch``; nothing of it exists outside."""
    uid, gid = os.getuid(), os.getgid()
    _check(_libc.unshare(ctypes.c_int(CLONE_NEWUSER | CLONE_NEWNS)), "unshare")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"0 {uid} 1")
    _write("/proc/self/gid_map", f"0 {gid} 1")
    _mount("none", "/", None, MS_REC | MS_PRIVATE, None)
    _mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=0700")
    upper, work = os.path.join(scratch, "upper"), os.path.join(scratch, "work")
    os.mkdir(upper)
    os.mkdir(work)
    options = f"lowerdir={workspace},upperdir={upper},workdir={work}"
    try:
        # in a user namespace overlayfs keeps its whiteouts and opaque folders in user.* xattrs
        # (without it, removing a folder of the lower layer fails with EIO); before 5.11, none
        _mount("overlay", workspace, "overlay", 0, options + ",userxattr")
    except OSError:
        _mount("overlay", workspace, "overlay", 0, options)


# -- running and bounding ------------------------------------------------------------------


class Capped:
    """One output stream: the first ``head`` bytes go through at once, the last ``tail`` are
    kept, what lies between is only counted and said in one line at the end."""

    def __init__(self, fd: int, head: int, tail: int) -> None:
        self.fd, self.head, self.tail = fd, head, tail
        self.sent = self.total = 0
        self.kept = b""

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        if self.sent < self.head:
            part = data[: self.head - self.sent]
            _send(self.fd, part)
            self.sent += len(part)
            data = data[len(part) :]
        if data and self.tail:
            self.kept = (self.kept + data)[-self.tail :]

    def close(self, left_out: str) -> None:
        skipped = self.total - self.sent - len(self.kept)
        if skipped > 0:
            _send(self.fd, ("\n" + left_out.format(n=skipped) + "\n").encode())
        _send(self.fd, self.kept)


def _send(fd: int, data: bytes) -> None:
    while data:
        try:
            n = os.write(fd, data)
        except BrokenPipeError:
            return  # the reader went away: nobody to tell
        except InterruptedError:
            continue
        data = data[n:]


def _ignoring_errors(action: Callable[_P, object], *args: _P.args, **kwargs: _P.kwargs) -> None:
    # gone already, or never made: nothing left to undo (contextlib would cost an import)
    try:
        action(*args, **kwargs)
    except OSError:
        return


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``, through /proc's children lists."""
    found, stack = [], [pid]
    while stack:
        parent = stack.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{parent}/task/{task}/children") as fh:
                    kids = [int(k) for k in fh.read().split()]
            except (OSError, ValueError):
                continue
            found += kids
            stack += kids
    return found


def kill_everything(child: int) -> None:
    """Kill the command's session and every process left below this one (their subreaper)."""
    _ignoring_errors(os.killpg, child, signal.SIGKILL)
    while True:
        left = descendants(os.getpid())
        if not left:
            break
        for pid in left:
            _ignoring_errors(os.kill, pid, signal.SIGKILL)
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            break


def choose(spec: Spec) -> tuple[str | None, str]:
    """The first of the spec's mechanisms that works here, or None and why none does."""
    why = []
    for mechanism in spec["mechanisms"]:
        if mechanism in ("bwrap", "overlay"):
            bwrap = spec.get("bwrap")
            if not bwrap or not os.access(bwrap, os.X_OK):
                why.append("no bubblewrap")
                continue
            flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET
            if not can_unshare(flags):
                why.append("no namespaces")
                continue
            return mechanism, ""
        if mechanism == "landlock":
            if landlock_abi() < 1:
                why.append("no Landlock")
            elif seccomp_arch() is None:
                why.append(f"no seccomp table for {os.uname().machine}")
            else:
                return mechanism, ""
    return None, ", ".join(why) or "no mechanism"


def _child(spec: Spec, mechanism: str, cwd: str, out: int, err: int, home: str, scratch: str) -> None:
    """In the forked child: set everything up and exec; any failure is said and ends it."""
    try:
        os.setsid()
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.closerange(3, 65536)
        for sig in (signal.SIGPIPE, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)
        limits = spec["limits"]
        resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu"], limits["cpu"] + 1))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        env = dict(spec["env"])
        command = [spec["shell"], "-c", spec["command"]]
        if mechanism in ("bwrap", "overlay"):
            if mechanism == "overlay":
                enter_overlay(spec["workspace"], scratch, limits["tmp"])
            bwrap = spec["bwrap"]
            assert bwrap is not None  # choose() took this mechanism only with one
            argv = [bwrap, *spec["binds"], "--chdir", cwd, "--", *command]
            os.execve(bwrap, argv, env)
        env["HOME"] = home
        abi = min(landlock_abi(), 7)
        rules = Ruleset(abi)
        read = LL_READ_FILE | LL_READ_DIR
        for path in spec["read"]:
            rules.allow(path, read | LL_EXECUTE)
        for path in ("/dev/zero", "/dev/urandom", "/dev/random", "/proc"):
            rules.allow(path, read)
        rules.allow("/dev/null", LL_READ_FILE | LL_WRITE_FILE)
        rules.allow(home, read)
        grant_view(rules, spec["workspace"], set(spec["hidden"]), read)
        drop_capabilities()
        arch = seccomp_arch()
        assert arch is not None
        rules.restrict()
        load_seccomp(seccomp_filter(arch))
        os.chdir(cwd)
        os.execve(spec["shell"], command, env)
    except BaseException as exc:
        try:
            os.write(2, (spec["texts"]["cannot"].format(why=exc) + "\n").encode())
        finally:
            os._exit(126)


def _home(scratch: str) -> str:
    """An empty home folder where one can be made (inside the CLI's sandbox only its TMPDIR is
    writable), else a path that does not exist."""
    for parent in (os.environ.get("TMPDIR", ""), scratch, "/tmp"):
        if parent:
            try:
                return _folder(parent, "flower-home-")
            except OSError:
                continue
    return "/nonexistent"


def _folder(parent: str, prefix: str) -> str:
    """A new empty folder of this process's own (mode 0700) under ``parent``."""
    while True:
        path = os.path.join(parent, prefix + os.urandom(6).hex())
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        return path


def run(spec: Spec) -> int:
    """Run the spec's command confined; its exit status (124 when it was stopped)."""
    texts, limits = spec["texts"], spec["limits"]
    workspace = spec["workspace"]
    here = os.path.realpath(os.getcwd())
    cwd = here if here == workspace or here.startswith(workspace + os.sep) else workspace
    mechanism, why = choose(spec)
    if mechanism is None:
        _send(2, (texts["cannot"].format(why=why) + "\n").encode())
        return 126
    home = _home(spec["scratch"]) if mechanism == "landlock" else ""
    scratch = _folder(spec["scratch"], "flower-overlay-") if mechanism == "overlay" else ""
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - child
        os.close(out_r)
        os.close(err_r)
        _child(spec, mechanism, cwd, out_w, err_w, home, scratch)
    os.close(out_w)
    os.close(err_w)
    try:
        status, stopped = _pump(child, out_r, err_r, limits, texts)
    finally:
        kill_everything(child)
        for folder in (home, scratch):
            if folder and folder != "/nonexistent":
                _ignoring_errors(os.rmdir, folder)
    if stopped:
        _send(2, (stopped + "\n").encode())
        return 124
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _pump(child: int, out_r: int, err_r: int, limits: Limits, texts: Texts) -> tuple[int, str]:
    """Pass the output on, bounded, until the command and everything it started are done."""
    streams = {
        out_r: Capped(1, limits["head"], limits["tail"]),
        err_r: Capped(2, limits["err_head"], limits["err_tail"]),
    }
    poll = select.poll()
    for fd in streams:
        poll.register(fd, select.POLLIN)
    pidfd = -1
    try:
        pidfd = os.pidfd_open(child)  # readable once the child exits (Linux 5.3, Python 3.9)
        poll.register(pidfd, select.POLLIN)
    except (AttributeError, OSError):
        pidfd = -1
    deadline = time.monotonic() + limits["wall"]
    status: int | None = None
    stopped = ""
    total = 0
    open_streams = set(streams)
    while open_streams or status is None:
        left = deadline - time.monotonic()
        if left <= 0:
            stopped = texts["timeout"].format(s=limits["wall"])
            break
        wait = left if pidfd >= 0 or status is not None else min(left, 0.05)
        for fd, _ in poll.poll(int(wait * 1000) + 1):
            if fd == pidfd:
                continue
            data = os.read(fd, 65536)
            if not data:
                poll.unregister(fd)
                open_streams.discard(fd)
                continue
            streams[fd].feed(data)
            total += len(data)
        if total > limits["stop"]:
            stopped = texts["flood"].format(n=limits["stop"])
            break
        if status is None:
            done, st = os.waitpid(child, os.WNOHANG)
            if done:
                status = st
                if pidfd >= 0:
                    poll.unregister(pidfd)
                    os.close(pidfd)
                    pidfd = -1
                kill_everything(child)  # what it left running ends with it; the pipes close
    if stopped:
        kill_everything(child)
        if status is None:
            try:
                _, status = os.waitpid(child, 0)
            except ChildProcessError:
                status = 0
    for fd, stream in streams.items():
        stream.close(texts["left_out"])
        os.close(fd)
    if pidfd >= 0:
        os.close(pidfd)
    return status or 0, stopped


def main(argv: list[str]) -> int:
    spec = json.loads(argv[1])
    return run(spec)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
