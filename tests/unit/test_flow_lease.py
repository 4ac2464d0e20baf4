"""A run's claim on its flow in a shared store is a lease: it survives the database restarting
(and a second process still cannot take the flow), a claim taken over meanwhile stops the run
with one line, and a store gone longer than the bound stops it before its lease can expire."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from flower.core.shared import SharedFlowBusy, SharedFlowLock, SharedRun, claim_lost, shared_run
from flower.sim.postgres import LocalPostgres
from flower.stores.lease import LEASE_VAR, OUTAGE_VAR


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.1)


def expiry(url: str) -> float:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT extract(epoch FROM expires_at) FROM flower.flows").fetchone()
    assert row is not None, "no lease row"
    return float(row[0])


def work(url: str, folder: Path) -> SharedRun:
    folder.mkdir(exist_ok=True)
    shared = shared_run(url, folder)
    assert shared is not None
    return shared


def test_the_lease_survives_a_restart_and_still_keeps_a_second_process_out(
    private_postgres: LocalPostgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LEASE_VAR, "120")
    monkeypatch.setenv(OUTAGE_VAR, "60")
    url = private_postgres.url()
    shared = work(url, tmp_path / "w")
    lock = SharedFlowLock(shared, "starter", run_dir=tmp_path / "runs", who="first")
    lock.acquire()
    try:
        before = expiry(url)
        private_postgres.pause()
        private_postgres.resume()
        # the heartbeat connects again and renews the same lease (the restart cut its connection)
        wait_until(lambda: expiry(url) > before, "the lease renewed after the restart")
        assert claim_lost(shared.identity.key) is None
        with pytest.raises(SharedFlowBusy) as caught:
            SharedFlowLock(shared, "starter", run_dir=tmp_path / "other-runs", who="second").acquire()
        assert "first" in str(caught.value) and "流程「starter」" in str(caught.value)
    finally:
        lock.release()
    again = SharedFlowLock(shared, "starter", run_dir=tmp_path / "other-runs", who="second")
    again.acquire()  # released at the end: free at once, no expiry to wait for
    again.release()


def test_a_lease_taken_over_meanwhile_stops_the_run_with_one_line(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LEASE_VAR, "12")  # a heartbeat every 2 s
    shared = work(pg_url, tmp_path / "w")
    lock = SharedFlowLock(shared, "starter", run_dir=tmp_path / "runs")
    lock.acquire()
    try:
        # what another machine does once it finds the lease expired (as after a long outage)
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(
                "UPDATE flower.flows SET holder_id = 'elsewhere', "
                """holder = '{"host": "machine-b", "who": "flower go", "pid": 4242}'::jsonb"""
            )
        wait_until(lambda: claim_lost(shared.identity.key) is not None, "the run told its claim is lost")
        lost = claim_lost(shared.identity.key)
        assert lost is not None
        line = lost.line()
        assert "\n" not in line and "Traceback" not in line
        assert "流程「starter」在会话库里已经被 machine-b 上的另一个 flower 接手了" in line
        assert "pid 4242" in line and "这个 run 停下了" in line
    finally:
        lock.release()
    with psycopg.connect(pg_url, autocommit=True) as conn:  # the other machine's lease is left alone
        held = conn.execute("SELECT holder_id FROM flower.flows").fetchall()
    assert held == [("elsewhere",)]


def test_a_store_gone_longer_than_the_bound_stops_the_run_before_its_lease_expires(
    private_postgres: LocalPostgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LEASE_VAR, "8")  # waits 4 s at most: half the lease
    url = private_postgres.url()
    shared = work(url, tmp_path / "w")
    lock = SharedFlowLock(shared, "starter", run_dir=tmp_path / "runs")
    lock.acquire()
    try:
        private_postgres.pause()
        try:
            wait_until(lambda: claim_lost(shared.identity.key) is not None, "the run fenced")
        finally:
            private_postgres.resume()
        lost = claim_lost(shared.identity.key)
        assert lost is not None
        line = lost.line()
        assert "连不上超过 4 秒" in line and "这个 run 停下了" in line and "\n" not in line
        assert "postgresql://flower:***@" in line and private_postgres.password not in line
    finally:
        lock.release()
    # the fenced holder's lease expires by itself; then another process takes the flow over
    other = SharedFlowLock(shared, "starter", run_dir=tmp_path / "b-runs", who="b")
    wait_until(lambda: _took(other), "another process took the flow over", timeout=60)
    assert claim_lost(shared.identity.key) is None  # held again here: the loss is over
    other.release()


def _took(lock: SharedFlowLock) -> bool:
    try:
        lock.acquire()
    except SharedFlowBusy:
        return False
    return True
