"""The fleet's pure parts: what a repository may be named by, notes in each reader's language, a
fleet run's `flower go` command line, the overlap check; and its books on a real PostgreSQL."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flower.base.i18n import set_language
from flower.cli.arguments import parse_args
from flower.fleet import FleetError, Note, RunRequest, repository_of
from flower.fleet.execute import go_argv
from flower.fleet.model import Execution
from flower.fleet.notes import FINISHED
from flower.fleet.records import FleetBook, new_run_id
from flower.sim.fleet import overlaps

user = st.text(st.sampled_from("abcxyz019_-."), min_size=1, max_size=12)
secret = st.text(st.sampled_from("abcXYZ019_-~!$"), min_size=1, max_size=24).map(lambda t: f"pw{t}")
host = st.sampled_from(["github.com", "git.example", "10.0.0.1:8443", "gitlab.example.org"])


@given(user, secret, host, st.sampled_from(["http", "https", "ssh", "git+ssh"]))
def test_a_url_with_a_password_is_refused_and_the_password_is_not_in_the_message(
    name, password, where, scheme
):
    with pytest.raises(FleetError) as refused:
        repository_of(f"{scheme}://{name}:{password}@{where}/org/repo.git")
    assert password not in str(refused.value) and "凭证" in str(refused.value)


@given(secret, host, st.sampled_from(["http", "https"]))
def test_an_http_url_with_a_token_as_its_user_is_refused(token, where, scheme):
    with pytest.raises(FleetError):
        repository_of(f"{scheme}://{token}@{where}/org/repo.git")


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/org/repo.git",
        "ssh://git@github.com/org/repo.git",
        "git@github.com:org/repo",
        "file:///srv/git/repo.git",
    ],
)
def test_urls_without_credentials_are_kept_as_given(url):
    assert repository_of(url) == url


def test_a_local_path_is_made_absolute_and_a_missing_one_is_said(tmp_path):
    repo = tmp_path / "repo.git"
    repo.mkdir()
    assert repository_of("repo.git", cwd=tmp_path) == str(repo.resolve())
    with pytest.raises(FleetError, match="不存在"):
        repository_of("nowhere.git", cwd=tmp_path)


def test_a_note_is_put_into_words_in_the_language_of_whoever_reads_it():
    note = Note(FINISHED, {"branch": "flower/abc"})
    assert note.text() == "跑完了:结果在分支 flower/abc"
    set_language("en")
    try:
        assert note.text() == "finished: the result is on the branch flower/abc"
    finally:
        set_language("zh")
    assert Note.of_json(note.as_json()) == note
    assert Note("{missing} field", {}).text() == "{missing} field"  # never raises on a reader


@pytest.mark.parametrize(
    "request_",
    [
        RunRequest("/r.git", "main", "写一个 hello.py"),
        RunRequest(
            "/r.git", "main", "--rounds 9 看起来像个开关", rounds=5, sandbox="off", judge_can_run=True
        ),
        RunRequest("/r.git", "v1", "-w /etc", timeout_s=0.0, sandbox="require"),
    ],
    ids=["defaults", "options", "a-request-that-looks-like-flags"],
)
def test_a_fleet_run_is_the_flower_go_command_line_with_its_options(request_, tmp_path):
    argv = go_argv(
        request_, store="postgresql://u@/db?host=/s", workspace=tmp_path / "ws", run_dir=tmp_path / "runs"
    )
    args = parse_args(argv)
    assert args.command == "go" and args.ask == request_.request
    assert (args.rounds, args.sandbox, args.judge_can_run, args.timeout) == (
        request_.rounds,
        request_.sandbox,
        request_.judge_can_run,
        request_.timeout_s,
    )
    assert args.workspace == str(tmp_path / "ws") and args.store.startswith("postgresql://")


def _ex(start: float, end: float) -> Execution:
    return Execution("w", "h", 1, start, end, "finished")


@pytest.mark.parametrize(
    ("spans", "found"),
    [
        ([(0, 5), (5, 9)], 0),
        ([(0, 5), (4, 9)], 1),
        ([(3, 4), (0, 10)], 1),
        ([(0, 0), (1, 2)], 1),  # an open execution reaches to now
        ([(0, 1), (2, 3), (4, 5)], 0),
    ],
)
def test_overlapping_executions_of_one_run_are_found(spans, found):
    assert len(overlaps({"r": [_ex(a, b) for a, b in spans]})) == found


def test_the_books_of_a_run_questions_answers_and_a_lost_execution(pg_url):
    book = FleetBook(pg_url)
    book.ensure()
    book.ensure()  # a second worker starting finds everything there
    run = new_run_id()
    book.add_run(run, RunRequest("/r.git", "main", "写一个 hello.py"))
    first = book.begin_execution(run, "a", 11)
    book.set_state(run, "running", worker="a")
    book.ask(run, first, "q1", "hello.py 要打印什么?", ["hello"])
    summary = book.summary(run)
    assert summary is not None and summary.state == "waiting" and summary.question == "hello.py 要打印什么?"
    # its worker dies; the person answers meanwhile; the next holder asks again and gets it
    assert book.close_lost(run, fence_s=4.0) == ["a"]
    assert book.answer(run, "hello") == "hello.py 要打印什么?"
    second = book.begin_execution(run, "b", 12)
    book.ask(run, second, "q1", "hello.py 要打印什么?", ["hello"])
    assert book.carried_answer(run, "hello.py 要打印什么?") == "hello"
    book.settle(second, "q1", "delivered")
    assert book.summary(run).state == "running"  # type: ignore[union-attr]
    assert book.answer(run, "again") is None  # nothing waits
    book.end_execution(second, "finished")
    intervals = book.intervals()[run]
    assert [e.reason for e in intervals] == ["lost", "finished"] and overlaps({run: intervals}) == []
    # the database's times (numeric from EXTRACT) come through as seconds, not as 0
    assert all(0 < e.started_at <= e.ended_at for e in intervals) and intervals[1].pid == 12
    detail = book.detail(run)
    assert detail is not None and detail.summary.created_at > 0 and detail.questions[0].options == ["hello"]
    assert all(q.asked_at > 0 for q in detail.questions) and detail.request.rounds == 3
    # a cancelled run stays cancelled, whatever a worker says after
    book.set_state(run, "cancelled")
    assert not book.set_state(run, "finished")


def test_submit_carries_the_stall_rounds_to_the_workers_flower_go(tmp_path):
    args = parse_args(["submit", "/r.git", "写一个 hello.py", "--stall-rounds", "2"])
    assert args.stall_rounds == 2
    request = RunRequest("/r.git", "main", "写一个 hello.py", stall_rounds=args.stall_rounds)
    # through the queue's JSON and back, as the worker reads it
    again = RunRequest.of("/r.git", "main", "写一个 hello.py", request.options())
    assert again.stall_rounds == 2
    go = parse_args(go_argv(again, store="postgresql://u@/db", workspace=tmp_path, run_dir=tmp_path / "r"))
    assert go.stall_rounds == 2
    # not given: the worker's own $FLOWER_STALL_ROUNDS (else 3) decides, so no flag is passed
    plain = RunRequest.of("/r.git", "main", "x", RunRequest("/r.git", "main", "x").options())
    assert plain.stall_rounds is None
    assert "--stall-rounds" not in go_argv(plain, store="s", workspace=tmp_path, run_dir=tmp_path / "r")
    assert parse_args(["submit", "/r.git", "x", "--stall-rounds", "0"]).stall_rounds == 0


def test_a_request_whose_options_are_of_the_wrong_shape_reads_as_its_defaults():
    # a queue row written by hand or by another version: each odd option is its default (this
    # raised TypeError on `int(None)` before)
    odd = {
        "rounds": None,
        "timeout_s": "soon",
        "sandbox": 3,
        "judge_can_run": "yes",
        "budget_usd": True,
        "stall_rounds": -1,
    }
    assert RunRequest.of("/r.git", "main", "x", odd) == RunRequest("/r.git", "main", "x")
