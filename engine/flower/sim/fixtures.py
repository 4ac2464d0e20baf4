"""pytest fixtures that run the real Claude Code CLI against flower.sim.

Load with ``pytest_plugins = ["flower.sim.fixtures"]``. Every test gets its own workspace,
CLI config dir and CLI temp dir under pytest's tmp_path; host variables that would point the
CLI at a real model are removed for the whole session.

``postgres`` is a real PostgreSQL server for the whole test session (``flower.sim.postgres``:
initdb + pg_ctl in a temp dir, Unix socket only, run as an unprivileged account when the tests
run as root); ``pg_url`` is the URL of a fresh database on it, one per test. A server that
cannot start fails the tests that need it, with the reason: it is never a skip.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Protocol

import pytest

from .env import isolated_env, scrub_host_model_vars
from .postgres import LocalPostgres, PostgresUnavailable
from .scenario import Scenario
from .server import SimServer


class ForbiddenNetworkAccess(RuntimeError):
    """A test tried to connect somewhere other than this machine."""


def _loopback_only(event: str, args: tuple[object, ...]) -> None:
    if event != "socket.connect":
        return
    sock, address = args[0], args[1]
    if getattr(sock, "family", None) not in (socket.AF_INET, socket.AF_INET6):
        return
    host = address[0] if isinstance(address, tuple) else address
    try:
        # what ip_address reads; any other host is no address, so not loopback either
        if isinstance(host, (str, int, bytes)) and ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        if host == "localhost":
            return
    raise ForbiddenNetworkAccess(f"tests may only connect to loopback, not {address!r}")


class SimEnv(Protocol):
    """``sim_env``: the environment of a CLI that talks to `sim` (options: isolated_env's)."""

    def __call__(self, sim: SimServer, **options: int | None) -> dict[str, str]: ...


class UseSim(Protocol):
    """``use_sim``: start `scenario` (or take a started sim) and point every CLI at it."""

    def __call__(
        self, scenario: SimServer | Scenario | Mapping[str, object], **options: int | None
    ) -> SimServer: ...


_guard_installed = False


def install_network_guard() -> None:
    """Refuse, inside this Python process, every connection that leaves the machine.

    Audit hooks cannot be removed, so this is installed once per test process.
    """
    global _guard_installed
    if not _guard_installed:
        sys.addaudithook(_loopback_only)
        _guard_installed = True


@pytest.fixture(scope="session", autouse=True)
def _isolated_host() -> Iterator[None]:
    install_network_guard()
    removed = scrub_host_model_vars()
    yield
    os.environ.update(removed)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def claude_root(tmp_path: Path) -> Path:
    """Where the CLI's config (transcripts) and temp files go for this test."""
    root = tmp_path / "claude"
    root.mkdir()
    return root


@pytest.fixture
def sim_factory() -> Iterator[Callable[[Scenario | Mapping[str, object]], SimServer]]:
    """Start flower.sim servers for a test; all are stopped when it ends."""
    started: list[SimServer] = []

    def start(scenario: Scenario | Mapping[str, object]) -> SimServer:
        server = SimServer(scenario).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def sim_env(claude_root: Path) -> SimEnv:
    """Environment for the CLI talking to a given sim: ``sim_env(sim, max_retries=2)``."""

    def make(sim: SimServer, **kw: int | None) -> dict[str, str]:
        return isolated_env(sim.base_url, claude_root, **kw)

    return make


@pytest.fixture
def cli_stderr() -> list[str]:
    """Collects the CLI's stderr lines (pass ``stderr=cli_stderr.append`` to the options)."""
    return []


@pytest.fixture
def use_sim(monkeypatch: pytest.MonkeyPatch, claude_root: Path) -> Iterator[UseSim]:
    """Point every CLI this process starts (e.g. through flower's Runtime) at a sim.

    The SDK hands the whole parent environment to the CLI, so this sets os.environ for the
    test's duration: ``sim = use_sim({"scripts": ...}, max_retries=0)``.
    """
    started: list[SimServer] = []

    def start(scenario: SimServer | Scenario | Mapping[str, object], **env_kw: int | None) -> SimServer:
        server = scenario if isinstance(scenario, SimServer) else SimServer(scenario).start()
        started.append(server)
        for name, value in isolated_env(server.base_url, claude_root, **env_kw).items():
            monkeypatch.setenv(name, value)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def postgres() -> Iterator[LocalPostgres]:
    """One real PostgreSQL server for the test session, stopped (and removed) at its end."""
    yield from _server()


@pytest.fixture
def private_postgres() -> Iterator[LocalPostgres]:
    """A PostgreSQL server of one test's own, to pause and resume (the session's is shared)."""
    yield from _server()


def _server() -> Iterator[LocalPostgres]:
    server = LocalPostgres()
    try:
        server.start()
    except PostgresUnavailable as exc:
        pytest.fail(f"PostgreSQL could not start for the tests: {exc}", pytrace=False)
    yield server
    server.stop()


_databases = iter(range(1, 1 << 30))


@pytest.fixture
def pg_url(postgres: LocalPostgres) -> str:
    """The URL of a fresh, empty database on the session's server (with its password)."""
    return postgres.create_database(f"test_{next(_databases)}")
