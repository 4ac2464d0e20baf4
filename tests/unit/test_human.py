"""HumanChannel: how an ask ends (answered / timeout / declined / over_budget / invalid), who may
answer from where, and what lands on disk and in front of the UI."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from flower.core.brief import Brief
from flower.core.events import Event
from flower.core.human import DECLINED, OVER_BUDGET, TIMEOUT, Ask, HumanChannel, Mail


class Sink:
    """An on_event target that records each event and the thread it arrived on."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.threads: list[int] = []

    def __call__(self, ev: Event) -> None:
        self.events.append(ev)
        self.threads.append(threading.get_ident())

    def states(self) -> list[tuple[str, str]]:
        out = []
        for e in self.events:
            if e.payload.get("kind") != "mail":
                ident, state = e.payload["id"], e.payload["state"]
                assert isinstance(ident, str) and isinstance(state, str)
                out.append((ident, state))
        return out


def from_thread(fn: Any, *args: Any, delay: float = 0.05) -> threading.Thread:
    """Call fn(*args) on another thread after a short delay, like a web handler would."""

    def run() -> None:
        time.sleep(delay)
        fn(*args)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


async def first_pending(ch: HumanChannel) -> Ask:
    for _ in range(200):
        if ch.pending():
            return ch.pending()[0]
        await asyncio.sleep(0.01)
    raise AssertionError("no ask became pending")


async def call_tool(ch: HumanChannel, name: str, args: dict[str, Any]) -> tuple[str, bool]:
    """Call one of the channel's MCP tools in-process, the way the CLI reaches them."""
    config = ch.mcp_servers()["human"]
    assert config["type"] == "sdk"
    async with Client(config["instance"]) as client:
        result = await client.call_tool(name, args)
    return "".join(getattr(c, "text", "") for c in result.content), bool(result.is_error)


# -- Ask ---------------------------------------------------------------------------------


def test_ask_defaults_and_event_shape():
    before = time.time()
    ask = Ask("q1", "CLI or web?")
    assert (ask.options, ask.state, ask.answer) == ([], "asked", "")
    assert before <= ask.asked_at <= time.time()

    ev = Ask("q7", "which?", ["a", "b"], asked_at=100.0, state="answered", answer="a").event(remaining=3)
    assert ev.kind == "ask" and ev.text == "which?" and isinstance(ev.raw, Ask)
    assert ev.payload == {
        "id": "q7",
        "options": ["a", "b"],
        "state": "answered",
        "answer": "a",
        "remaining": 3,
        "asked_at": 100.0,
    }
    assert Ask("q1", "x").event().payload["remaining"] == 0


def test_waited_s_counts_from_asked_at_with_one_decimal():
    ask = Ask("q1", "x", asked_at=time.time() - 12.34)
    assert 12.3 <= ask.waited_s <= 12.5
    assert ask.waited_s == round(ask.waited_s, 1)


# -- answering ---------------------------------------------------------------------------


async def test_answer_from_another_thread_wakes_the_waiting_ask():
    sink = Sink()
    ch = HumanChannel(on_event=sink)
    loop_thread = threading.get_ident()

    async def answer_when_asked() -> None:
        pending = await first_pending(ch)
        assert ch.pending() == [pending]
        from_thread(ch.answer, pending.id, "纯命令行")

    helper = asyncio.create_task(answer_when_asked())
    ask = await asyncio.wait_for(ch.ask("命令行还是 Web?", ["纯命令行", "Web 界面"]), 5)
    await helper

    assert (ask.id, ask.state, ask.answer, ask.options) == (
        "q1",
        "answered",
        "纯命令行",
        ["纯命令行", "Web 界面"],
    )
    assert ch.pending() == []
    assert ch.asks == [ask]
    assert sink.states() == [("q1", "asked"), ("q1", "answered")]
    assert set(sink.threads) == {loop_thread}  # on_event never runs on the answering thread
    assert ch.answer("q1", "again") is False  # no longer waiting


async def test_decline_from_another_thread_keeps_the_reason_for_the_log(tmp_path: Path):
    ch = HumanChannel(log_path=tmp_path / "问答记录.md")
    task = asyncio.create_task(ch.ask("要不要兼容 Windows?"))
    pending = await first_pending(ch)
    from_thread(ch.decline, pending.id, "先跳过")
    ask = await asyncio.wait_for(task, 5)

    assert (ask.state, ask.answer) == ("declined", "先跳过")
    assert "先跳过" in (tmp_path / "问答记录.md").read_text(encoding="utf-8")
    assert ch.decline(ask.id) is False


async def test_a_blank_answer_means_skip():
    ch = HumanChannel()
    task = asyncio.create_task(ch.ask("颜色?"))
    pending = await first_pending(ch)
    assert ch.answer(pending.id, "   ") is True
    assert (await task).state == "declined"


async def test_unknown_ids_are_not_waiting():
    ch = HumanChannel()
    assert ch.answer("q99", "x") is False
    assert ch.decline("q99") is False


async def test_answer_on_the_loop_thread_itself_works_too():
    ch = HumanChannel()
    task = asyncio.create_task(ch.ask("x?"))
    pending = await first_pending(ch)
    assert ch.answer(pending.id, "yes") is True
    assert ch.answer(pending.id, "no") is False  # the first answer wins, even before it lands
    assert (await task).answer == "yes"


# -- timeouts ----------------------------------------------------------------------------


async def test_a_short_timeout_ends_the_ask_and_late_answers_are_refused():
    sink = Sink()
    ch = HumanChannel(on_event=sink, timeout_s=0.05)
    started = time.monotonic()
    ask = await ch.ask("还在吗?")

    assert ask.state == "timeout" and ask.answer == ""
    assert 0.04 <= time.monotonic() - started < 2
    assert ch.pending() == []
    assert ch.answer(ask.id, "too late") is False
    assert sink.states() == [("q1", "asked"), ("q1", "timeout")]


@pytest.mark.parametrize("timeout_s", [0, -1, 0.0])
async def test_zero_or_negative_timeout_settles_at_once_without_an_asked_event(timeout_s: float):
    sink = Sink()
    ch = HumanChannel(on_event=sink, timeout_s=timeout_s)
    started = time.monotonic()
    ask = await ch.ask("有人吗?", ["有", "没有"])

    assert time.monotonic() - started < 0.5
    assert ask.state == "timeout"
    assert sink.states() == [("q1", "timeout")]
    assert ch.pending() == []
    assert await ch.next_ask(timeout=0) is None  # never queued for a puller either


async def test_timeout_none_waits_until_someone_answers():
    ch = HumanChannel(timeout_s=None)
    task = asyncio.create_task(ch.ask("慢慢想"))
    pending = await first_pending(ch)
    await asyncio.sleep(0.2)
    assert not task.done()
    from_thread(ch.answer, pending.id, "想好了", delay=0.0)
    assert (await asyncio.wait_for(task, 5)).state == "answered"


async def test_cancelling_an_ask_raises_and_leaves_nothing_pending():
    ch = HumanChannel(timeout_s=None)
    task = asyncio.create_task(ch.ask("x?"))
    pending = await first_pending(ch)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert ch.pending() == []
    assert ch.answer(pending.id, "late") is False


# -- budget ------------------------------------------------------------------------------


async def test_max_asks_zero_refuses_at_once():
    sink = Sink()
    ch = HumanChannel(on_event=sink, max_asks=0, timeout_s=None)
    ask = await asyncio.wait_for(ch.ask("能问吗?"), 1)

    assert ask.state == "over_budget"
    assert ch.remaining == 0
    assert sink.states() == [("q1", "over_budget")]
    assert ch.pending() == []


async def test_the_budget_counts_real_asks_only():
    ch = HumanChannel(max_asks=2, timeout_s=0)
    assert ch.remaining == 2
    assert (await ch.ask("one")).state == "timeout"  # an unanswered ask still used a turn
    assert ch.remaining == 1
    assert (await ch.ask("   ")).state == "invalid"  # a malformed call is not a question
    assert ch.remaining == 1
    assert (await ch.ask("two")).state == "timeout"
    assert ch.remaining == 0
    third = await ch.ask("three")
    assert third.state == "over_budget"
    assert ch.remaining == 0
    assert [a.id for a in ch.asks] == ["q1", "q2", "q3", "q4"]


async def test_remaining_is_minus_one_when_unlimited():
    ch = HumanChannel(timeout_s=0)
    assert ch.remaining == -1
    await ch.ask("x")
    assert ch.remaining == -1


async def test_remaining_in_the_asked_event_already_counts_this_ask():
    sink = Sink()
    ch = HumanChannel(on_event=sink, max_asks=3)
    task = asyncio.create_task(ch.ask("x?"))
    pending = await first_pending(ch)
    assert sink.events[0].payload["remaining"] == 2
    ch.answer(pending.id, "y")
    await task


@pytest.mark.parametrize("question", ["", "   \n", None, 42])
async def test_an_empty_or_non_text_question_is_invalid(question: Any):
    sink = Sink()
    ch = HumanChannel(on_event=sink, timeout_s=None)
    ask = await asyncio.wait_for(ch.ask(question), 1)
    assert ask.state == "invalid"
    assert sink.states() == [("q1", "invalid")]


async def test_options_are_cleaned():
    ch = HumanChannel(timeout_s=0)
    assert (await ch.ask("x", ["  a ", "", None, 3])).options == ["a", "3"]  # type: ignore[list-item]
    assert (await ch.ask("y", None)).options == []


# -- pull mode ---------------------------------------------------------------------------


async def test_next_ask_hands_out_each_waiting_ask_once():
    ch = HumanChannel()
    first = asyncio.create_task(ch.ask("one?"))
    second = asyncio.create_task(ch.ask("two?"))

    got1 = await asyncio.wait_for(ch.next_ask(), 2)
    got2 = await asyncio.wait_for(ch.next_ask(), 2)
    assert got1 is not None and got2 is not None
    assert [got1.question, got2.question] == ["one?", "two?"]
    assert await ch.next_ask(timeout=0.05) is None

    ch.answer(got1.id, "1")
    ch.answer(got2.id, "2")
    assert [(await first).answer, (await second).answer] == ["1", "2"]


async def test_next_ask_waits_for_an_ask_that_comes_later():
    ch = HumanChannel()
    puller = asyncio.create_task(ch.next_ask())
    await asyncio.sleep(0.05)
    assert not puller.done()
    asking = asyncio.create_task(ch.ask("later?"))
    got = await asyncio.wait_for(puller, 2)
    assert got is not None and got.question == "later?"
    ch.answer(got.id, "ok")
    assert (await asking).state == "answered"


async def test_next_ask_skips_asks_that_were_already_settled():
    ch = HumanChannel(timeout_s=0.02)
    await ch.ask("timed out before anyone pulled")
    assert await ch.next_ask(timeout=0.05) is None


async def test_next_ask_times_out_with_none_and_raises_when_cancelled():
    ch = HumanChannel()
    started = time.monotonic()
    assert await ch.next_ask(timeout=0.05) is None
    assert time.monotonic() - started < 1

    puller = asyncio.create_task(ch.next_ask())
    await asyncio.sleep(0.01)
    puller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await puller


# -- log and transcript ------------------------------------------------------------------


async def test_every_settled_ask_is_appended_to_the_log(tmp_path: Path):
    log = tmp_path / "notes" / "问答记录.md"
    ch = HumanChannel(log_path=log, max_asks=2)

    task = asyncio.create_task(ch.ask("CLI 还是 Web?", ["CLI", "Web"]))
    pending = await first_pending(ch)
    assert not log.exists()  # written when an ask ends, not when it starts
    ch.answer(pending.id, "CLI")
    await task
    ch.timeout_s = 0
    await ch.ask("要多语言吗?")
    await ch.ask("第三个问题")  # over budget

    text = log.read_text(encoding="utf-8")
    assert text.startswith("# 问答记录\n")
    assert text.count("# 问答记录") == 1
    for expected in (
        "q1 · answered",
        "CLI 还是 Web?",
        "CLI / Web",
        "- 答:CLI",
        "q2 · timeout",
        "要多语言吗?",
        "q3 · over_budget",
        "第三个问题",
    ):
        assert expected in text
    assert text.index("q1") < text.index("q2") < text.index("q3")


async def test_the_log_appends_to_what_is_already_there(tmp_path: Path):
    log = tmp_path / "问答记录.md"
    log.write_text("# 问答记录\n\n## q1 · answered · earlier run\n", encoding="utf-8")
    ch = HumanChannel(log_path=log, timeout_s=0)
    await ch.ask("新的问题")
    text = log.read_text(encoding="utf-8")
    assert text.startswith("# 问答记录\n\n## q1 · answered · earlier run\n")
    assert "新的问题" in text and text.count("# 问答记录") == 1


async def test_an_unwritable_log_does_not_stop_the_ask(tmp_path: Path):
    (tmp_path / "dir").mkdir()
    ch = HumanChannel(log_path=tmp_path / "dir", timeout_s=0)  # a directory cannot be appended to
    assert (await ch.ask("x")).state == "timeout"


async def test_transcript_is_markdown_of_all_asks():
    ch = HumanChannel(timeout_s=0)
    assert ch.transcript().startswith("# 问答记录")
    await ch.ask("第一问", ["甲", "乙"])
    md = ch.transcript()
    assert "## q1 · timeout" in md and "第一问" in md and "甲 / 乙" in md


# -- amend and mail ----------------------------------------------------------------------


def test_amend_appends_a_labelled_section(tmp_path: Path):
    brief = tmp_path / "需求.md"
    Brief(goal="做一个 X", accept="- 跑 x 输出 y", bounds="- 不做 GUI", unknowns="- 无").write(brief)
    ch = HumanChannel(amend_path=brief)

    assert ch.amend("顺便报告总字节数") is True
    assert ch.amend("换成 JSON 输出", label="补充") is True
    text = brief.read_text(encoding="utf-8")
    assert "## 运行中补充" in text and "顺便报告总字节数" in text
    assert "## 补充" in text and "换成 JSON 输出" in text
    assert text.index("顺便报告总字节数") < text.index("换成 JSON 输出")
    # appended, not overwritten, and the four sections still parse unchanged
    loaded = Brief.load(brief)
    assert loaded is not None and loaded.complete()
    assert loaded.unknowns == "- 无" and loaded.goal == "做一个 X"


def test_amend_reports_when_nothing_was_written(tmp_path: Path):
    assert HumanChannel().amend("x") is False
    assert HumanChannel(amend_path=tmp_path / "b.md").amend("  ") is False
    (tmp_path / "d").mkdir()
    assert HumanChannel(amend_path=tmp_path / "d").amend("x") is False  # OSError
    assert not (tmp_path / "b.md").exists()


async def test_send_queues_mail_amends_and_tells_the_ui(tmp_path: Path):
    sink = Sink()
    brief = tmp_path / "需求.md"
    ch = HumanChannel(on_event=sink, amend_path=brief)

    mail = ch.send("  顺便报告总字节数  ")
    assert isinstance(mail, Mail)
    assert (mail.id, mail.text, mail.taken) == ("m1", "顺便报告总字节数", False)
    assert ch.mail == [mail] and ch.pending_mail() == [mail]
    assert "顺便报告总字节数" in brief.read_text(encoding="utf-8")

    ev = sink.events[-1]
    assert ev.kind == "ask" and ev.text == "顺便报告总字节数"
    assert ev.payload == {"kind": "mail", "state": "queued", "id": "m1", "amended": str(brief)}
    assert "options" not in ev.payload and "remaining" not in ev.payload


def test_send_ignores_blank_text_and_reports_no_amend_without_a_path():
    sink = Sink()
    ch = HumanChannel(on_event=sink)
    assert ch.send("   ") is None and ch.mail == []
    ch.send("hi")
    assert sink.events[-1].payload["amended"] == ""


async def test_send_from_another_thread_delivers_the_event_on_the_loop_thread():
    sink = Sink()
    ch = HumanChannel(on_event=sink, timeout_s=0)
    await ch.ask("warm up")  # the channel learns its loop
    thread = from_thread(ch.send, "from the web handler", delay=0.0)
    thread.join()
    for _ in range(100):
        if any(e.payload.get("kind") == "mail" for e in sink.events):
            break
        await asyncio.sleep(0.01)
    assert sink.events[-1].text == "from the web handler"
    assert set(sink.threads) == {threading.get_ident()}


# -- the MCP tools -----------------------------------------------------------------------


def test_tool_names_and_server_config():
    ch = HumanChannel()
    assert ch.tool_name == "mcp__human__ask"
    assert ch.inbox_name == "mcp__human__inbox"
    servers = ch.mcp_servers()
    assert list(servers) == ["human"]
    assert servers["human"]["type"] == "sdk" and servers["human"]["name"] == "human"
    # full schemas up front, not behind ToolSearch (a setting the SDK's TypedDict lacks)
    assert dict(servers["human"])["alwaysLoad"] is True


@pytest.mark.parametrize(
    ("timeout_s", "expected_ms"),
    [(1800.0, 1_860_000), (0, 60_000), (-5, 60_000), (None, 2_147_483_647), (1e9, 2_147_483_647)],
)
def test_the_cli_tool_timeout_always_outlasts_the_channel_timeout(timeout_s: float | None, expected_ms: int):
    assert dict(HumanChannel(timeout_s=timeout_s).mcp_servers()["human"])["timeout"] == expected_ms


async def test_ask_tool_returns_the_answer():
    ch = HumanChannel()

    async def answer() -> None:
        pending = await first_pending(ch)
        from_thread(ch.answer, pending.id, "用 SQLite")

    helper = asyncio.create_task(answer())
    text, is_error = await asyncio.wait_for(
        call_tool(ch, "ask", {"question": "存哪?", "options": ["SQLite", "文件"]}), 5
    )
    await helper
    assert (text, is_error) == ("用 SQLite", False)
    assert ch.asks[0].options == ["SQLite", "文件"]


async def test_ask_tool_returns_the_fixed_texts():
    assert await call_tool(HumanChannel(timeout_s=0), "ask", {"question": "x"}) == (TIMEOUT, False)
    assert await call_tool(HumanChannel(max_asks=0), "ask", {"question": "x"}) == (OVER_BUDGET, False)
    text, is_error = await call_tool(HumanChannel(timeout_s=0), "ask", {"question": "  "})
    assert is_error and "问题是空的" in text

    ch = HumanChannel()
    helper = asyncio.create_task(first_pending(ch))
    tool = asyncio.create_task(call_tool(ch, "ask", {"question": "x"}))
    ch.decline((await helper).id, "不想答")
    assert await asyncio.wait_for(tool, 5) == (DECLINED, False)


async def test_custom_texts_replace_the_defaults():
    ch = HumanChannel(timeout_s=0, timeout_text="nobody", over_budget_text="no more", max_asks=1)
    assert (await call_tool(ch, "ask", {"question": "a"}))[0] == "nobody"
    assert (await call_tool(ch, "ask", {"question": "b"}))[0] == "no more"


async def test_inbox_tool_hands_over_pending_mail_once():
    sink = Sink()
    ch = HumanChannel(on_event=sink)
    empty, _ = await call_tool(ch, "inbox", {})

    first = ch.send("也统计空行")
    second = ch.send("输出用 JSON")
    assert first is not None and second is not None
    text, is_error = await call_tool(ch, "inbox", {})
    again, _ = await call_tool(ch, "inbox", {})

    assert not is_error
    assert "也统计空行" in text and "输出用 JSON" in text
    assert text.index("也统计空行") < text.index("输出用 JSON")
    assert empty == again and "也统计空行" not in again
    assert first.taken and second.taken and ch.pending_mail() == []
    delivered = [e.payload for e in sink.events if e.payload.get("state") == "delivered"]
    assert [p["id"] for p in delivered] == ["m1", "m2"]


# -- the UI callback ---------------------------------------------------------------------


async def test_ui_callback_errors_are_collected_and_never_stop_the_run():
    calls: list[object] = []

    def broken(ev: Event) -> None:
        calls.append(ev.payload.get("state", ""))
        raise ValueError("frontend crashed")

    ch = HumanChannel(on_event=broken, timeout_s=0.02)
    ask = await ch.ask("x?")
    ch.send("y")

    assert ask.state == "timeout"
    assert calls == ["asked", "timeout", "queued"]
    assert ch.ui_errors == ["ValueError: frontend crashed"] * 3


def test_constructor_keeps_its_arguments_public(tmp_path: Path):
    sink = Sink()
    ch = HumanChannel(
        on_event=sink,
        max_asks=4,
        timeout_s=12.5,
        log_path=str(tmp_path / "log.md"),
        amend_path=tmp_path / "brief.md",
        over_budget_text="a",
        timeout_text="b",
        declined_text="c",
    )
    assert ch.on_event is sink and ch.max_asks == 4 and ch.timeout_s == 12.5
    assert ch.log_path == tmp_path / "log.md" and ch.amend_path == tmp_path / "brief.md"
    assert (ch.over_budget_text, ch.timeout_text, ch.declined_text) == ("a", "b", "c")
    assert (ch.asks, ch.mail, ch.ui_errors) == ([], [], [])

    defaults = HumanChannel()
    assert (defaults.on_event, defaults.max_asks, defaults.timeout_s) == (None, None, 1800.0)
    assert (defaults.log_path, defaults.amend_path) == (None, None)
    assert (defaults.over_budget_text, defaults.timeout_text, defaults.declined_text) == (
        OVER_BUDGET,
        TIMEOUT,
        DECLINED,
    )
