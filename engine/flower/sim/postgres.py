"""A throwaway PostgreSQL server for the tests and the benchmarks.

``LocalPostgres().start()`` runs Debian's (or any installed) PostgreSQL in a fresh data
directory under the system temp dir: ``initdb`` with a random password (SCRAM), then
``pg_ctl start`` with no TCP listener at all (``listen_addresses=''``): clients reach it through
a Unix socket in that directory, so nothing listens on a network port and two servers never
collide. ``stop()`` shuts it down (``pg_ctl stop -m fast``) and removes the directory.

PostgreSQL refuses to run as root. When this process is root, the server runs as an
unprivileged account instead: ``postgres`` (which Debian's package creates) if it exists, else
``flower-pg``, created here with ``useradd --system``. The data directory is handed to that
account; the client side (this process) stays root and connects through the socket.

Binaries are looked up in ``$FLOWER_PG_BINDIR``, then Debian's ``/usr/lib/postgresql/<version>/bin``
(the newest version), then ``pg_config --bindir`` and ``initdb`` on PATH. If the server cannot
start, ``PostgresUnavailable`` says why (which step, and its output).

It is a test server: ``fsync`` is off. Nothing here is used by a flower run.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import quote

__all__ = ["LocalPostgres", "PostgresUnavailable", "pg_bindir"]

BINDIR_VAR = "FLOWER_PG_BINDIR"
DEBIAN_ROOT = Path("/usr/lib/postgresql")
SERVICE_USER = "flower-pg"
DEFAULT_USER = "postgres"
PORT = 5432  # only names the socket file (.s.PGSQL.5432); no TCP port is opened
_STEP_TIMEOUT_S = 120


class PostgresUnavailable(RuntimeError):
    """The test server could not be started; the message says which step failed and why."""


def _version_key(path: Path) -> tuple[int, ...]:
    digits = [int(p) for p in path.parent.parent.name.split(".") if p.isdigit()]
    return tuple(digits) or (0,)


def pg_bindir() -> Path:
    """The directory holding initdb, pg_ctl and postgres; PostgresUnavailable if there is none."""
    configured = os.environ.get(BINDIR_VAR)
    if configured:
        path = Path(configured)
        if (path / "initdb").is_file():
            return path
        raise PostgresUnavailable(f"{BINDIR_VAR}={configured} holds no initdb")
    found = sorted(DEBIAN_ROOT.glob("*/bin/initdb"), key=_version_key)
    if found:
        return found[-1].parent
    pg_config = shutil.which("pg_config")
    if pg_config:
        done = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        path = Path(done.stdout.strip())
        if done.returncode == 0 and (path / "initdb").is_file():
            return path
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).resolve().parent
    raise PostgresUnavailable(
        "PostgreSQL is not installed: no initdb found (install the `postgresql` package; "
        "`make system-deps` does it on Debian)"
    )


def _service_account() -> pwd.struct_passwd | None:
    """The account the server runs as: None when this process is not root (it runs as itself)."""
    if os.geteuid() != 0:
        return None
    for name in (DEFAULT_USER, SERVICE_USER):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    done = subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVICE_USER],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise PostgresUnavailable(
            f"running as root, and PostgreSQL refuses root: no `{DEFAULT_USER}` account, and "
            f"`useradd {SERVICE_USER}` failed: {done.stderr.strip() or done.returncode}"
        )
    return pwd.getpwnam(SERVICE_USER)


class LocalPostgres:
    """One PostgreSQL server in a temp directory, reachable only through its Unix socket."""

    def __init__(self, *, user: str = "flower", database: str = "flower") -> None:
        self.user = user
        self.database = database
        self.password = secrets.token_urlsafe(18)
        self.root: Path | None = None
        self._account: pwd.struct_passwd | None = None
        self._bindir: Path | None = None

    # -- where it is -------------------------------------------------------------------------

    @property
    def socket_dir(self) -> Path:
        if self.root is None:
            raise PostgresUnavailable("the server is not started")
        return self.root

    @property
    def data_dir(self) -> Path:
        return self.socket_dir / "data"

    def url(self, database: str | None = None) -> str:
        """``postgresql://user:password@/database?host=<socket dir>``."""
        name = database or self.database
        return (
            f"postgresql://{quote(self.user, safe='')}:{quote(self.password, safe='')}@/"
            f"{quote(name, safe='')}?host={quote(str(self.socket_dir), safe='/')}"
        )

    # -- life --------------------------------------------------------------------------------

    def start(self) -> LocalPostgres:
        self._bindir = pg_bindir()
        self._account = _service_account()
        self.root = Path(tempfile.mkdtemp(prefix="flower-pg-"))
        try:
            self._initdb()
            self._launch()
            self.create_database(self.database)
        except BaseException:
            self.stop()
            raise
        return self

    def _launch(self) -> None:
        root = self.socket_dir
        self._run(
            "pg_ctl start",
            [
                "pg_ctl",
                "-D",
                str(self.data_dir),
                "-l",
                str(root / "server.log"),
                "-w",
                "-t",
                "60",
                "-o",
                f"-c listen_addresses='' -c unix_socket_directories='{root}' -c port={PORT} "
                "-c fsync=off -c max_connections=300 -c shared_buffers=64MB",
                "start",
            ],
            log=root / "server.log",
        )

    def pause(self) -> None:
        """Shut the server down as an outage would (``pg_ctl stop -m fast``: every connection is
        cut), keeping its data for ``resume``."""
        self._run("pg_ctl stop", ["pg_ctl", "-D", str(self.data_dir), "-m", "fast", "-w", "stop"])

    def resume(self) -> None:
        """Start the paused server again, on the same socket, with the same data."""
        self._launch()

    def stop(self) -> None:
        root, self.root = self.root, None
        if root is None:
            return
        try:
            if (root / "data" / "postmaster.pid").exists():
                self.root = root
                try:
                    self._run("pg_ctl stop", ["pg_ctl", "-D", str(root / "data"), "-m", "fast", "-w", "stop"])
                finally:
                    self.root = None
        finally:
            shutil.rmtree(root, ignore_errors=True)

    def __enter__(self) -> LocalPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def create_database(self, name: str) -> str:
        """A fresh, empty database on this server; its URL."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url(name)

    # -- plumbing ----------------------------------------------------------------------------

    def _initdb(self) -> None:
        root = self.socket_dir
        secret = root / "pwfile"
        secret.write_text(self.password + "\n", encoding="utf-8")
        secret.chmod(0o600)
        if self._account is not None:
            for path in (root, secret):
                os.chown(path, self._account.pw_uid, self._account.pw_gid)
        self._run(
            "initdb",
            [
                "initdb",
                "-D",
                str(self.data_dir),
                "-U",
                self.user,
                f"--pwfile={secret}",
                "--auth=scram-sha-256",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
            ],
        )
        secret.unlink()

    def _run(self, what: str, argv: list[str], *, log: Path | None = None) -> None:
        assert self._bindir is not None
        command = [str(self._bindir / argv[0]), *argv[1:]]
        account = self._account
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                text=True,
                check=False,
                timeout=_STEP_TIMEOUT_S,
                cwd=str(self.socket_dir),
                user=account.pw_uid if account is not None else None,
                group=account.pw_gid if account is not None else None,
                extra_groups=[] if account is not None else None,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise PostgresUnavailable(f"{what} could not run: {exc}") from None
        if done.returncode != 0:
            output = (done.stderr or done.stdout).strip()
            if log is not None and log.is_file():
                output += "\n" + log.read_text(encoding="utf-8", errors="replace")[-2000:]
            who = f" (as {account.pw_name})" if account is not None else ""
            raise PostgresUnavailable(f"{what}{who} failed with exit code {done.returncode}:\n{output}")
