"""The no-progress detector (core/progress.py): generated runs of verdicts and workspaces, against
a plain restatement of the rule; and the fingerprint read from real checkpoints."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from flower.core.checkpoints import Checkpoints, Entry
from flower.core.progress import NoProgress, fingerprint, round_fingerprints, same_checks, stall_limit

CHECKS = ["运行 python3 hello.py 输出 hello", "README.md 写了怎么运行", "只用标准库"]
# the same checks as a judge may write them again: other width, other spacing
RESPELT = {CHECKS[0]: "运行  python3 hello.py 输出 hello", CHECKS[2]: "只用标准库 "}


@dataclass
class Round:
    achieved: bool
    failed: list[str]
    before: str | None
    after: str | None
    changed: bool  # what the generator did to the workspace, known apart from the fingerprints


def workspace_runs(rng: random.Random, length: int) -> list[Round]:
    """A run of `length` judged rounds: each round may change a file, touch one (new mtime, same
    content), flip an executable bit, add or remove one, or do nothing; each verdict achieves,
    or fails one of a few sets of checks (respelt now and then)."""
    files = {f"f{i}.txt": Entry(sha=f"{i:064x}", size=i, mode=0o644, mtime_ns=i) for i in range(3)}
    sets = [[CHECKS[1]], [CHECKS[0], CHECKS[2]], [], [CHECKS[2], CHECKS[0]]]
    rounds = []
    idle = rng.random()  # how often this run's rounds change nothing
    last = rng.choice(sets)
    for _ in range(length):
        before = fingerprint(files)
        old = dict(files)
        what = "none" if rng.random() < idle else rng.choice(["touch", "edit", "exec", "add", "remove"])
        name = rng.choice(sorted(files)) if files else ""
        if what == "touch" and name:
            files[name] = replace(files[name], mtime_ns=files[name].mtime_ns + 1)
        elif what == "edit" and name:
            files[name] = replace(files[name], sha=f"{rng.getrandbits(256):064x}")
        elif what == "exec" and name:
            files[name] = replace(files[name], mode=files[name].mode ^ 0o100)
        elif what == "add":
            files[f"n{rng.getrandbits(32)}.txt"] = Entry(sha="ab" * 32)
        elif what == "remove" and name:
            del files[name]
        changed = {p: (e.sha, e.link, e.mode & 0o111) for p, e in old.items()} != {
            p: (e.sha, e.link, e.mode & 0o111) for p, e in files.items()
        }
        achieved = rng.random() < 0.1
        last = last if rng.random() < idle else rng.choice(sets)
        failed = [] if achieved else [RESPELT.get(c, c) if rng.random() < 0.3 else c for c in last]
        unknown = rng.random() < 0.03  # no checkpoint to read the workspace from
        rounds.append(Round(achieved, failed, None if unknown else before, fingerprint(files), changed))
    return rounds


def expected_fires(rounds: list[Round], limit: int) -> list[int]:
    """The rule restated: round i asks when it and the limit-1 rounds before it, none of them at or
    before the last round that asked, all failed the same checks with the workspace unchanged."""
    fires: list[int] = []
    for i in range(len(rounds)):
        start = i - limit + 1
        if limit <= 0 or start < 0 or (fires and start <= fires[-1]):
            continue
        window = rounds[start : i + 1]
        stuck = all(not r.achieved and r.before is not None and not r.changed for r in window)
        if stuck and len({same_checks(r.failed) for r in window}) == 1:
            fires.append(i)
    return fires


@pytest.mark.parametrize("limit", [0, 1, 2, 3, 5])
def test_it_fires_exactly_when_limit_rounds_in_a_row_make_no_progress(limit):
    rng = random.Random(20261202 + limit)
    fired_somewhere = 0
    for _ in range(1500):
        rounds = workspace_runs(rng, rng.randint(1, 25))
        detector = NoProgress(limit)
        fires = [i for i, r in enumerate(rounds) if detector.observe(r.achieved, r.failed, r.before, r.after)]
        assert fires == expected_fires(rounds, limit), rounds
        fired_somewhere += bool(fires)
    # the generated runs do reach the rule (else the comparison above proves nothing)
    assert (fired_somewhere > 150) == (limit > 0)


def test_three_identical_failed_rounds_on_an_unchanged_workspace_fire_on_the_third():
    detector = NoProgress(3)
    same = fingerprint({"a": Entry(sha="1" * 64)})
    seen = [detector.observe(False, [CHECKS[1]], same, same) for _ in range(7)]
    assert seen == [False, False, True, False, False, True, False]  # asked, then counted afresh


def test_a_change_other_checks_or_an_achieved_round_start_the_count_again():
    a, b = fingerprint({"a": Entry(sha="1" * 64)}), fingerprint({"a": Entry(sha="2" * 64)})
    detector = NoProgress(3)
    assert not detector.observe(False, [CHECKS[1]], a, a)
    assert not detector.observe(False, [CHECKS[1]], a, b)  # the workspace changed
    assert not detector.observe(False, [CHECKS[1]], b, b)
    assert not detector.observe(False, [CHECKS[0]], b, b)  # other checks: 1 of a new streak
    assert not detector.observe(False, [CHECKS[0]], b, b)
    assert not detector.observe(True, [], b, b)  # achieved
    assert [detector.observe(False, [CHECKS[0]], b, b) for _ in range(3)] == [False, False, True]


def test_the_limit_comes_from_the_value_else_the_environment_else_three(monkeypatch):
    monkeypatch.delenv("FLOWER_STALL_ROUNDS", raising=False)
    assert stall_limit() == 3 and stall_limit(5) == 5 and stall_limit(0) == 0
    monkeypatch.setenv("FLOWER_STALL_ROUNDS", "7")
    assert stall_limit() == 7 and stall_limit(2) == 2
    for bad in ("many", "-1", ""):
        monkeypatch.setenv("FLOWER_STALL_ROUNDS", bad)
        assert stall_limit() == 3


def test_the_fingerprint_from_checkpoints_sees_content_not_mtimes(tmp_path: Path):
    ws, run_dir = tmp_path / "ws", tmp_path / "ws" / "runs"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    (ws / ".env").write_text("KEY=x\n")  # never read, never counted by content
    store = Checkpoints(run_dir, ws)
    assert round_fingerprints(store) == (None, None)  # no checkpoint yet: not known
    assert round_fingerprints(None) == (None, None)

    store.take(round_no=1, phase="before")
    before, after = round_fingerprints(store)
    assert before is not None and before == after

    (ws / "a.txt").write_text("one\n")  # rewritten, same bytes: a new mtime only
    (ws / ".env").write_text("KEY=y\n")
    assert round_fingerprints(store) == (before, before)

    (ws / "a.txt").write_text("two\n")
    changed = round_fingerprints(store)
    assert changed[0] == before and changed[1] != before

    store.take(round_no=2, phase="before")
    (ws / "a.txt").chmod(0o755)
    assert round_fingerprints(store)[0] != round_fingerprints(store)[1]
