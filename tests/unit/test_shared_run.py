"""What makes a run continuable on another machine: the workspace's identity, the store keyed by
it (and the old checkout's paths mapped home), the lineage kept in the store beside the file,
one flow at a time across machines, and store URLs that never show their password."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast

import pytest
from claude_agent_sdk import project_key_for_directory
from claude_agent_sdk.testing import run_session_store_conformance
from claude_agent_sdk.types import SessionKey, SessionStore, SessionStoreEntry
from store_entries import get, put

from flower.core.identity import identify, normalize_remote
from flower.core.lineage import Lineage
from flower.core.rundir import FlowBusy, holding
from flower.core.shared import SharedFlowBusy, SharedFlowLock, SharedRun, shared_key, shared_run
from flower.stores.postgres import PostgresRunBook, PostgresSessionStore
from flower.stores.prune import PruningSessionStore
from flower.stores.urls import StoreURLError, check_store_url, redact_text, redact_url
from flower.stores.workspace import ROOT, WorkspaceStore

GIT_ID = ["-c", "user.name=t", "-c", "user.email=t@flower.invalid", "-c", "init.defaultBranch=main"]


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *GIT_ID, *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def repo(path: Path, *remotes: tuple[str, str]) -> Path:
    path.mkdir(parents=True)
    git("init", "-q", cwd=path)
    for name, url in remotes:
        git("remote", "add", name, url, cwd=path)
    (path / "f").write_text("x")
    git("add", "f", cwd=path)
    git("commit", "-q", "-m", "x", cwd=path)
    return path


# -- the workspace's identity ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "normal"),
    [
        ("https://github.com/Org/repo.git", "github.com/Org/repo"),
        ("https://x-access-token:ghp_secret@github.com/Org/repo.git", "github.com/Org/repo"),
        ("git@github.com:Org/repo.git", "github.com/Org/repo"),
        ("ssh://git@GitHub.com:22/Org/repo", "github.com/Org/repo"),
        ("https://user@gitlab.example.com:8443/group/sub/repo/", "gitlab.example.com/group/sub/repo"),
        ("git://example.org/repo.git", "example.org/repo"),
    ],
    ids=["https", "token", "scp", "ssh-port-case", "nested-port", "git-protocol"],
)
def test_a_remote_has_one_spelling_and_no_credentials(url: str, normal: str) -> None:
    assert normalize_remote(url) == normal
    assert "secret" not in normalize_remote(url) and "@" not in normalize_remote(url)


def test_a_local_path_remote_is_its_resolved_path(tmp_path: Path) -> None:
    (tmp_path / "origin.git").mkdir()
    assert normalize_remote(str(tmp_path / "origin.git")) == f"file:{tmp_path / 'origin'}"
    assert normalize_remote("../origin.git", base=tmp_path / "clone") == f"file:{tmp_path / 'origin'}"
    assert normalize_remote((tmp_path / "origin.git").as_uri()) == f"file:{tmp_path / 'origin'}"


def test_two_clones_of_one_repository_on_one_branch_are_one_work(tmp_path: Path) -> None:
    a = repo(tmp_path / "a", ("origin", "https://tok@github.com/o/r.git"))
    b = repo(tmp_path / "elsewhere" / "b", ("origin", "git@github.com:o/r"))
    assert identify(a) == identify(b)
    assert identify(a).key == "git:github.com/o/r#main" and identify(a).shared
    git("checkout", "-q", "-b", "other", cwd=b)
    assert identify(b).key == "git:github.com/o/r#other"
    (a / "sub" / "dir").mkdir(parents=True)
    assert identify(a / "sub" / "dir").key == "git:github.com/o/r#main:sub/dir"


def test_with_several_remotes_the_tracked_one_then_origin_then_the_first_by_name(tmp_path: Path) -> None:
    w = repo(tmp_path / "w", ("zeta", "https://h/zeta"), ("alpha", "https://h/alpha"))
    assert identify(w).key == "git:h/alpha#main"
    git("remote", "add", "origin", "https://h/origin", cwd=w)
    assert identify(w).key == "git:h/origin#main"
    git("config", "branch.main.remote", "zeta", cwd=w)
    assert identify(w).key == "git:h/zeta#main" and "remote zeta" in identify(w).why


def test_no_remote_a_detached_head_or_no_repository_stay_with_this_folder(tmp_path: Path) -> None:
    host = socket.gethostname()
    lonely = repo(tmp_path / "lonely")
    detached = repo(tmp_path / "detached", ("origin", "https://h/r"))
    git("checkout", "-q", "--detach", cwd=detached)
    plain = tmp_path / "plain"
    plain.mkdir()
    for folder, why in ((lonely, "没有 remote"), (detached, "detached HEAD"), (plain, "不是 git 仓库")):
        found = identify(folder)
        assert found.key == f"folder:{host}:{folder}" and not found.shared
        assert why in found.why


# -- store URLs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "shown", "secrets"),
    [
        ("postgresql://flower:pa%40ss@db:5432/x", "postgresql://flower:***@db:5432/x", ["pa@ss", "pa%40ss"]),
        ("postgres://u:secret@/x?host=/run/pg", "postgres://u:***@/x?host=/run/pg", ["secret"]),
        (
            "postgresql://u@db/x?password=s3cret&sslmode=require",
            "postgresql://u@db/x?password=***&sslmode=require",
            ["s3cret"],
        ),
        ("postgresql://db/x", "postgresql://db/x", []),
    ],
    ids=["userinfo", "socket", "query", "none"],
)
def test_a_store_url_is_shown_with_its_password_masked(url: str, shown: str, secrets: list[str]) -> None:
    assert redact_url(url) == shown
    for secret in secrets:
        said = redact_text(f"connection to {url} failed (password {secret})", url)
        assert secret not in said and "***" in said


@pytest.mark.parametrize("url", ["mysql://a:b@c/d", "/tmp/sessions.db", "postgresql://u:p@h:port/d"])
def test_what_is_not_a_store_url_is_said_without_its_password(url: str) -> None:
    with pytest.raises(StoreURLError) as caught:
        check_store_url(url)
    assert ":b@" not in str(caught.value) and "u:p@" not in str(caught.value)


# -- the store keyed by the work -------------------------------------------------------------------


def keyed(url: str, workspace: Path, shared: str = "workspace:git:h/r#main") -> WorkspaceStore:
    local = [project_key_for_directory(workspace)]
    return WorkspaceStore(PostgresSessionStore(url), workspace=workspace, shared_key=shared, local_keys=local)


async def test_the_sdk_conformance_suite_passes_for_the_keyed_store_and_the_layers_on_it(
    pg_url: str, tmp_path: Path
) -> None:
    counter = itertools.count()
    made: list[Any] = []

    def make() -> SessionStore:
        n = next(counter)
        ws = tmp_path / f"ws{n}"
        local = ["proj", project_key_for_directory(ws)]  # the suite's own key stands for this workspace
        under = WorkspaceStore(
            PostgresSessionStore(pg_url, schema=f"keyed_{n}"),
            workspace=ws,
            shared_key=f"workspace:{n}",
            local_keys=local,
        )
        store = PruningSessionStore(under, ws) if n % 2 else under
        made.append(store)
        return store

    try:
        await run_session_store_conformance(make, skip_optional=frozenset())
    finally:
        for store in made:
            store.close()
    assert len(made) == 15


async def test_two_checkouts_of_one_work_share_sessions_and_see_their_own_paths(
    pg_url: str, tmp_path: Path
) -> None:
    a, b = tmp_path / "machine-a" / "proj", tmp_path / "machine-b" / "checkout"
    at_a, at_b = keyed(pg_url, a), keyed(pg_url, b)
    key_a: SessionKey = {"project_key": project_key_for_directory(a), "session_id": "s1"}
    key_b: SessionKey = {"project_key": project_key_for_directory(b), "session_id": "s1"}
    written = [
        {"type": "user", "uuid": "u1", "cwd": str(a), "message": {"role": "user", "content": "go"}},
        {
            "type": "assistant",
            "uuid": "u2",
            "cwd": str(a),
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": f"{a}/src/x.py"}},
                    {"type": "text", "text": f"see {a}2/other and {a}-old, and {a}/README.md"},
                ],
            },
        },
    ]
    try:
        await put(at_a, key_a, written)
        assert await get(at_a, key_a) == written  # at home nothing changes
        assert at_b.has_session(key_b["project_key"], "s1")
        moved = await get(at_b, key_b)
        assert moved[0]["cwd"] == str(b)
        assert moved[1]["message"]["content"][0]["input"]["file_path"] == f"{b}/src/x.py"
        # a whole path component only: a sibling whose name starts the same is left alone
        assert moved[1]["message"]["content"][1]["text"] == f"see {a}2/other and {a}-old, and {b}/README.md"
        await put(at_b, key_b, [{"type": "user", "uuid": "u3", "cwd": str(b)}])
        back = await get(at_a, key_a)  # and back at A, B's paths are mapped to A's
        assert back[:2] == written and back[2]["cwd"] == str(a)
        roots = at_a.decision_ledger().decided(key_a)[ROOT]
        assert set(roots) == {str(a), str(b)}
        assert at_a.projects() == [project_key_for_directory(a)]
        # the rows in the store are the CLI's own, untouched
        raw = PostgresSessionStore(pg_url)
        try:
            stored = await get(raw, {"project_key": "workspace:git:h/r#main", "session_id": "s1"})
        finally:
            raw.close()
        assert stored[:2] == written
    finally:
        at_a.close()
        at_b.close()


async def test_another_work_never_sees_the_sessions(pg_url: str, tmp_path: Path) -> None:
    a = keyed(pg_url, tmp_path / "a")
    other = keyed(pg_url, tmp_path / "b", shared="workspace:git:h/r#experiment")
    try:
        key: SessionKey = {"project_key": project_key_for_directory(tmp_path / "a"), "session_id": "s1"}
        await a.append(key, [cast(SessionStoreEntry, {"type": "user", "uuid": "u1"})])
        theirs = project_key_for_directory(tmp_path / "b")
        assert await other.load({"project_key": theirs, "session_id": "s1"}) is None
        assert not other.has_session(theirs, "s1")
        assert await other.list_sessions(theirs) == []
    finally:
        a.close()
        other.close()


# -- the lineage in the store ----------------------------------------------------------------------


def test_the_lineage_lives_in_the_store_and_the_file_mirrors_it(pg_url: str, tmp_path: Path) -> None:
    a, b = repo(tmp_path / "a", ("origin", "https://h/r")), repo(tmp_path / "b", ("origin", "https://h/r"))
    first = Lineage.open(tmp_path / "runs-a", a, shared=SharedRun.of(a, PostgresRunBook.direct(pg_url), "db"))
    first.bump()
    first.remember("干活", "s-1")
    second = Lineage.open(
        tmp_path / "runs-b", b, shared=SharedRun.of(b, PostgresRunBook.direct(pg_url), "db")
    )
    assert (second.steps, second.woke) == ({"干活": "s-1"}, 1)  # a fresh run folder knows the run
    assert second.bump() == 2
    assert Lineage.open(tmp_path / "runs-b", b) == Lineage(
        tmp_path / "runs-b" / "lineage.json", b, {"干活": "s-1"}, 2
    )
    # the first folder's file is behind; opened with the store it is not
    assert Lineage.open(tmp_path / "runs-a", a).woke == 1
    assert Lineage.open(tmp_path / "runs-a", a, shared=shared_run(pg_url, a)).woke == 2
    # --new archives the store's copy along with the file: nobody continues it any more
    reopened = Lineage.open(tmp_path / "runs-b", b, shared=shared_run(pg_url, b))
    reopened.archive(tmp_path / "archive")
    assert Lineage.open(tmp_path / "runs-a", a, shared=shared_run(pg_url, a)).steps == {}
    assert PostgresRunBook.direct(pg_url).lineage(identify(a).key) == {
        "workspace": str(b),
        "woke": 0,
        "steps": {},
    }


def test_an_unreachable_store_leaves_the_lineage_file_working(tmp_path: Path) -> None:
    url = f"postgresql://u:pw@/nowhere?host={tmp_path / 'none'}"
    shared = shared_run(url, tmp_path)
    assert shared is not None and shared.where == f"postgresql://u:***@/nowhere?host={tmp_path / 'none'}"
    lineage = Lineage.open(tmp_path / "runs", tmp_path, shared=shared)
    lineage.bump()
    lineage.remember("一", "s-1")
    assert Lineage.open(tmp_path / "runs", tmp_path).steps == {"一": "s-1"}


# -- one flow at a time, on every machine ----------------------------------------------------------

HOLDER = r"""
import sys, time
from pathlib import Path
import flower.stores.lease
from flower.core.shared import SharedFlowLock, shared_run
# as if on another machine: its pid means nothing here, so only its lease's expiry frees the flow
flower.stores.lease._pid_namespace = lambda: "machine-a/1"
url, ws, ready = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
lock = SharedFlowLock(shared_run(url, ws), "starter", run_dir=ws / "runs", who="holder")
lock.acquire()
ready.touch()
time.sleep(600)
"""


def test_one_flow_of_one_work_runs_on_one_machine_and_a_killed_holder_frees_it(
    pg_url: str, tmp_path: Path
) -> None:
    a, b = repo(tmp_path / "a", ("origin", "https://h/r")), repo(tmp_path / "b", ("origin", "https://h/r"))
    ready = tmp_path / "ready"
    # the holder's lease lives 5 s without a heartbeat (FLOWER_LEASE_S): its bound once killed
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, pg_url, str(a), str(ready)],
        start_new_session=True,
        env={**os.environ, "FLOWER_LEASE_S": "5"},
    )
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert holder.poll() is None and time.monotonic() < deadline, "the holder never took the flow"
            time.sleep(0.05)
        shared = shared_run(pg_url, b)
        assert shared is not None
        with pytest.raises(SharedFlowBusy) as caught:
            SharedFlowLock(shared, "starter", run_dir=b / "runs").acquire()
        assert isinstance(caught.value, FlowBusy)
        text = str(caught.value)
        assert f"在 {socket.gethostname()} 上跑流程「starter」" in text and f"pid {holder.pid}" in text
        assert "holder" in text and "postgresql://flower:***@" in text
        # another flow of the same work, and the same flow of another work, are free
        SharedFlowLock(shared, "other-flow", run_dir=b / "runs").acquire()
        other_work = shared_run(pg_url, repo(tmp_path / "c", ("origin", "https://h/another")))
        assert other_work is not None
        SharedFlowLock(other_work, "starter", run_dir=b / "runs").acquire()
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait(10)
    lock = SharedFlowLock(shared, "starter", run_dir=b / "runs")
    deadline = time.monotonic() + 30
    while True:  # nobody renews the killed holder's lease: it expires, and the flow is free
        try:
            lock.acquire()
            break
        except SharedFlowBusy:
            assert time.monotonic() < deadline, "a killed holder kept the flow"
            time.sleep(0.1)
    with holding(SharedFlowLock(shared, "starter", run_dir=b / "runs")):
        pass  # this context holds the key already: not taken twice, not refused
    lock.release()
    again = SharedFlowLock(shared, "starter", run_dir=b / "runs")
    again.acquire()
    again.release()


def test_the_shared_key_names_the_work(tmp_path: Path) -> None:
    w = repo(tmp_path / "w", ("origin", "https://h/r"))
    assert shared_key(identify(w)) == "workspace:git:h/r#main"


def test_asyncio_is_not_needed_for_the_helpers(pg_url: str, tmp_path: Path) -> None:
    store = keyed(pg_url, tmp_path)
    try:
        key: SessionKey = {"project_key": project_key_for_directory(tmp_path), "session_id": "s9"}
        store.add(key, [cast(SessionStoreEntry, {"type": "user", "uuid": "a"})])
        assert store.uuids(key) == {"a"}
        assert asyncio.run(store.list_sessions(key["project_key"]))[0]["session_id"] == "s9"
    finally:
        store.close()


# -- how Runtime chooses its store -----------------------------------------------------------------


@pytest.fixture
def key_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.delenv("FLOWER_STORE", raising=False)


def test_by_default_the_runtime_builds_the_seeds_store(tmp_path: Path, key_set: None) -> None:
    from flower.core.runtime import Runtime
    from flower.stores.sqlite import SqliteSessionStore

    rt = Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs", keep_denials=3)
    try:
        assert type(rt.store) is PruningSessionStore and type(rt.store.inner) is SqliteSessionStore
        assert rt.store.inner.path == tmp_path / "runs" / "sessions.db"
        assert rt.store.prune_policy.keep_denials == 3 and rt.store.workspace == tmp_path / "ws"
        assert rt.shared is None
    finally:
        rt.close()


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_a_store_url_gives_the_same_layers_over_the_shared_store(
    tmp_path: Path, pg_url: str, key_set: None, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    from flower.core.runtime import Runtime

    ws = repo(tmp_path / "ws", ("origin", "https://h/r"))
    if how == "environment":
        monkeypatch.setenv("FLOWER_STORE", pg_url)
    rt = Runtime(workspace=ws, run_dir=tmp_path / "runs", store=pg_url if how == "argument" else None)
    try:
        assert type(rt.store) is PruningSessionStore and isinstance(rt.store.inner, WorkspaceStore)
        assert rt.store.inner.shared_key == "workspace:git:h/r#main"
        assert rt.shared is not None and rt.shared.identity == identify(ws)
        assert "***" in rt.store_where and pg_url.split(":")[2].split("@")[0] not in rt.store_where
        assert not (tmp_path / "runs" / "sessions.db").exists()
    finally:
        rt.close()
    # an empty store forces the local one, whatever the environment says
    local = Runtime(workspace=ws, run_dir=tmp_path / "runs", store="")
    try:
        assert local.shared is None and (tmp_path / "runs" / "sessions.db").exists()
    finally:
        local.close()


def test_a_store_without_flowers_helpers_is_refused_at_construction(tmp_path: Path, key_set: None) -> None:
    from claude_agent_sdk import InMemorySessionStore

    from flower.core.runtime import Runtime

    with pytest.raises(TypeError, match="InMemorySessionStore does not"):
        Runtime(workspace=tmp_path, run_dir=tmp_path / "runs", store=InMemorySessionStore())


def test_a_bad_store_url_is_a_clear_error_without_its_password(tmp_path: Path, key_set: None) -> None:
    from flower.core.recovery import StoreError
    from flower.core.runtime import Runtime

    with pytest.raises(StoreError) as caught:
        Runtime(workspace=tmp_path, run_dir=tmp_path / "runs", store="postgresql://u:topsecret@h:port/db")
    assert "topsecret" not in str(caught.value) and "u:***@" in str(caught.value)
