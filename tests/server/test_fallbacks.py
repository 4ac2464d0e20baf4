"""A client that declares no flower extension (Neovim 0.7's capabilities, nothing under
experimental.flower) still gets everything through standard LSP: questions as
window/showMessageRequest with a free-text path that holds no request open, the banner as
window/showMessage, the run's log and the meter as window/logMessage and progress, refusals shown,
no window/showDocument, and requests without params answered. A client that can show no question
at all has its questions settled at once, and is told so."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from clients import VSCODE_EXTENSIONS, HeldOpen
from fake_engine import read_log
from lsprotocol import types
from pygls.exceptions import JsonRpcMethodNotFound
from pytest_lsp import client_capabilities

from flower.cli.render import Render
from flower.core.events import Question, StepStarted
from flower_lsp import protocol as p
from flower_lsp.questions import UNSHOWN

# what the suite's English-speaking client is shown (flower_lsp.questions, flower_lsp.runs)
SKIP = "Skip (the agent decides)"
START_ACTION = "New run…"
WHAT_TO_DO = "What should be done? One sentence is enough."
CANNOT_ASK = (
    "flower: this editor can show no questions (it declares neither flower/ask nor"
    " window/showMessageRequest): every question of this run is settled at once as unanswered,"
    " and the agent decides by itself"
)

ASK = {"ask": {"question": "hello.py 要打印什么?", "options": ["hello", "hello, flower"]}}
STEP = {"step": {"name": "确认需求", "index": 1, "total": 3}}


def stock() -> types.ClientCapabilities:
    """Neovim 0.7's own client: message requests and progress, no showDocument, no flower."""
    capabilities = client_capabilities("neovim@v0.7.0")
    assert capabilities.experimental is None and capabilities.window is not None
    assert capabilities.window.show_document is not None and not capabilities.window.show_document.support
    return capabilities


def answers(run_dir: Path) -> list[dict[str, Any]]:
    return [{k: e[k] for k in ("ask", "state", "answer")} for e in read_log(run_dir) if "ask" in e]


def action(params: types.ShowMessageRequestParams, index: int) -> types.MessageActionItem:
    """The person picks the action at `index`."""
    assert params.actions is not None
    return params.actions[index]


def questions_in(s: Any) -> list[types.ShowMessageRequestParams]:
    return [o for o in s.offers if o.message.startswith("Flower asks")]


def shown(s: Any) -> list[str]:
    return [m.message for m in s.client.messages]


def logged(s: Any) -> list[str]:
    return [m.message for m in s.client.log_messages]


def ended(s: Any) -> str | None:
    """The log line that says how the run ended (the client gets no flower/event)."""
    return next((m for m in logged(s) if m.startswith("run in ws: ")), None)


def no_flower_notifications(s: Any) -> bool:
    return s.banners == [] and s.contexts == [] and s.events == [] and s.asks == []


def settles_when(s: Any, choose: Callable[[types.ShowMessageRequestParams], Any]) -> None:
    """The person: `choose` answers each question's message request; other requests get nothing."""

    def person(params: types.ShowMessageRequestParams) -> Any:
        return choose(params) if params.message.startswith("Flower asks") else None

    s.answer_offer = person


async def test_a_question_comes_as_a_message_request_with_its_options_and_how_to_answer_in_words(
    fake_lsp, script
):
    script([ASK])
    async with fake_lsp(capabilities=stock(), options={"timeout_s": 60}) as s:
        settles_when(s, lambda params: action(params, 1))
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: ended(s), what="the run to end")
        [question] = questions_in(s)
        assert [a.title for a in question.actions or []] == ["hello", "hello, flower", SKIP]
        assert question.message.splitlines() == [
            "Flower asks (q1, ws): hello.py 要打印什么?",
            'Pick an answer, or answer in your own words with the command flower.answer and the argument {"id": "q1", "text": "..."}.',  # noqa: E501 (the message, as the person reads it)
            "Without an answer within 60 s the agent decides by itself.",
        ]
        assert answers(s.run_dir) == [{"ask": "q1", "state": "answered", "answer": "hello, flower"}]
        assert no_flower_notifications(s)


async def test_an_answer_in_words_by_flower_answer_settles_the_question_and_withdraws_the_prompt(
    fake_lsp, script
):
    script([ASK, {"mark": "after"}])
    async with fake_lsp(capabilities=stock()) as s:
        s.answer_offer = prompt = HeldOpen()
        await s.command("flower.start", {"ask": "X"})
        await asyncio.wait_for(prompt.shown.wait(), 20)
        # no id: the folder's oldest waiting question
        result = await s.command("flower.answer", {"text": "hello, world"})
        assert result == {"ok": True, "message": "Answered q1.", "offer": None, "uri": None}
        await s.until(lambda: {"mark": "after"} in read_log(s.run_dir))
        assert answers(s.run_dir) == [{"ask": "q1", "state": "answered", "answer": "hello, world"}]
        await asyncio.wait_for(prompt.withdrawn.wait(), 10)  # the server sent $/cancelRequest


async def test_a_closed_prompt_leaves_the_question_waiting_for_words_and_skip_declines(fake_lsp, script):
    script([ASK, ASK])
    async with fake_lsp(capabilities=stock()) as s:
        replies = iter([None, types.MessageActionItem(title=SKIP)])
        settles_when(s, lambda params: next(replies))
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: any("q1 still waits" in m for m in logged(s)))
        assert [a["id"] for a in (await s.state())["pending"]] == ["q1"]
        assert (await s.command("flower.answer", {"id": "q1", "text": "hello"}))["ok"] is True
        await s.until(lambda: len(answers(s.run_dir)) == 2)
        assert answers(s.run_dir) == [
            {"ask": "q1", "state": "answered", "answer": "hello"},
            {"ask": "q2", "state": "declined", "answer": "dismissed in the editor"},
        ]


async def test_a_question_no_transport_could_show_is_declined_at_once_and_said_in_the_log(fake_lsp, script):
    script([ASK])
    async with fake_lsp(capabilities=stock()) as s:

        def broken(params: types.ShowMessageRequestParams) -> Any:
            raise RuntimeError("the prompt crashed")

        s.answer_offer = broken
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: answers(s.run_dir))
        assert answers(s.run_dir) == [{"ask": "q1", "state": "declined", "answer": UNSHOWN}]
        # the log line is a notification of its own: it may reach the client after the answer
        # reached the disk, so it is waited for rather than expected at once
        await s.until(
            lambda: any(m.startswith("flower: could not show question q1 (") for m in logged(s)),
            what="the log line saying the question could not be shown",
        )


async def test_a_client_that_can_show_no_question_has_each_settled_at_once_and_is_told(fake_lsp, script):
    script([ASK, {"mark": "after"}])
    # default options: an ask would wait 1800 s if the engine waited for this client
    async with fake_lsp(capabilities=types.ClientCapabilities()) as s:
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: {"mark": "after"} in read_log(s.run_dir))
        assert answers(s.run_dir) == [{"ask": "q1", "state": "timeout", "answer": ""}]
        assert CANNOT_ASK in logged(s)
        assert s.offers == [] and s.asks == []


async def test_the_run_log_and_the_meter_come_as_the_terminals_lines_in_log_messages_and_progress(
    fake_lsp, script
):
    script(
        [
            STEP,
            {"context": {"used": 80_200, "step": "确认需求"}},
            {"text": "先看看现场"},
            {"end_step": {"name": "确认需求", "cost_usd": 0.25}},
        ]
    )
    async with fake_lsp(capabilities=stock()) as s:
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: ended(s), what="the run to end")
        assert no_flower_notifications(s)
        step_lines = "\n".join(
            Render().lines(StepStarted(text="确认需求", index=1, total=3, resumed=False, woke=1))
        ).strip("\n")
        lines = logged(s)
        i = lines.index("run started in ws")
        assert lines[i + 1 : i + 4] == [step_lines, "context 80.2K/1M · 确认需求", "  先看看现场"]
        assert lines[-1] == "run in ws: finished · $0.2500"
        reports = [r.message for r in s.progress() if isinstance(r, types.WorkDoneProgressReport)]
        assert reports == [
            "确认需求 1/3",
            "确认需求 1/3 · context 80.2K/1M",
            "确认需求 1/3 · context 80.2K/1M",
        ]


async def test_a_question_in_the_log_reads_as_in_the_terminal(fake_lsp, script):
    script([ASK])
    async with fake_lsp(capabilities=stock()) as s:
        settles_when(s, lambda params: action(params, 0))
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: ended(s), what="the run to end")
        render = Render()
        asked = Question(
            text="hello.py 要打印什么?",
            id="q1",
            options=["hello", "hello, flower"],
            state="asked",
            answer="",
            remaining=-1,
            asked_at=0.0,
        )
        done = Question(
            text="hello.py 要打印什么?",
            id="q1",
            options=[],
            state="answered",
            answer="hello",
            remaining=-1,
            asked_at=0.0,
        )
        expected = ["\n".join(render.lines(asked)), "\n".join(render.lines(done))]
        assert [m for m in logged(s) if m in expected] == expected


async def test_the_banner_comes_as_a_message(fake_lsp, workspace):
    brief = workspace / ".flower" / "notes" / "需求.md"
    brief.parent.mkdir(parents=True)
    brief.write_text("## 目标\n做个 X\n", encoding="utf-8")
    async with fake_lsp(capabilities=stock()) as s:
        await s.until(lambda: shown(s))
        assert shown(s) == [f"<- 在 {workspace} 接上上次  需求已确认 · 第 1 次唤醒"]
        assert s.client.messages[0].type == types.MessageType.Info and s.banners == []


@pytest.mark.parametrize(
    ("command", "args", "message"),
    [
        (
            "flower.say",
            {"text": "先别动 README"},
            "flower: Nothing is running in ws: continue or start a run first.",
        ),
        ("flower.stop", {}, "flower: Nothing is running in ws."),
        ("flower.answer", {"text": "hello"}, "flower: No question is waiting in ws."),
    ],
    ids=["say", "stop", "answer"],
)
async def test_a_refusal_is_shown_to_a_client_that_does_not_show_results(fake_lsp, command, args, message):
    async with fake_lsp(capabilities=stock()) as s:
        result = await s.command(command, args)
        assert result["ok"] is False
        await s.until(lambda: shown(s))
        assert shown(s) == [message] and s.client.messages[0].type == types.MessageType.Warning
    # a client that shows results itself is not told twice
    async with fake_lsp() as s:
        assert (await s.command(command, args))["ok"] is False
        await s.state()  # the server answers in order: any message would have come before this
        assert shown(s) == []


async def test_a_document_is_not_shown_to_a_client_that_cannot_and_the_result_says_where(fake_lsp, workspace):
    goal = workspace / ".flower" / "notes" / "目标.md"
    goal.parent.mkdir(parents=True)
    goal.write_text("# 目标\n", encoding="utf-8")
    async with fake_lsp(capabilities=stock()) as s:
        result = await s.command("flower.openDocument", {"which": "goal"})
        message = f"This editor cannot open documents for the server: 目标.md is {goal.resolve()}"
        assert result == {"ok": False, "message": message, "offer": None, "uri": goal.resolve().as_uri()}
        await s.until(lambda: shown(s))
        assert s.client.shown_documents == []
        assert f"flower: {message}" in logged(s) and shown(s) == [f"flower: {message}"]


async def test_requests_without_params_or_with_an_empty_array_are_answered(fake_lsp):
    async with fake_lsp(capabilities=stock()) as s:
        protocol = s.client.protocol
        for msg_id, message in [
            ("no-params", {"jsonrpc": "2.0", "id": "no-params", "method": "flower/state"}),
            ("null", {"jsonrpc": "2.0", "id": "null", "method": "flower/state", "params": None}),
            ("array", {"jsonrpc": "2.0", "id": "array", "method": "flower/state", "params": []}),
        ]:
            future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            protocol._request_futures[msg_id] = future  # the reply finds it by id
            protocol._send_data(message)
            state = await asyncio.wait_for(future, 20)
            assert (state["folder"], state["running"]) == (s.folder, False), msg_id
        # a command whose one argument is an empty Lua table
        result = await s.command("flower.stop", [])
        assert result["message"] == "Nothing is running in ws."


async def test_nothing_to_continue_offers_a_run_and_takes_the_request_in_words(fake_lsp, script):
    script([{"mark": "ran"}])
    async with fake_lsp(capabilities=stock()) as s:
        what = asyncio.Event()

        def person(params: types.ShowMessageRequestParams) -> Any:
            if params.message.startswith("Nothing to continue"):
                return types.MessageActionItem(title=START_ACTION)
            what.set()
            return None  # closes the prompt: the request is given in words instead

        s.answer_offer = person
        result = await s.command("flower.continue")
        assert result["offer"] == "start" and shown(s) == []  # the offer is the message
        await asyncio.wait_for(what.wait(), 20)
        [question] = questions_in(s)
        assert question.message.startswith("Flower asks (start-") and WHAT_TO_DO in question.message
        assert [a.title for a in question.actions or []] == [SKIP]
        assert [q["question"] for q in (await s.state())["pending"]] == [WHAT_TO_DO]
        assert (await s.command("flower.answer", {"text": "写个 hello.py"}))["ok"] is True
        await s.until(lambda: {"mark": "ran"} in read_log(s.run_dir))
        assert [e["started"] for e in read_log(s.run_dir) if "started" in e] == ["写个 hello.py"]


async def test_a_client_that_can_show_no_message_request_is_told_there_is_nothing_to_continue(fake_lsp):
    async with fake_lsp(capabilities=types.ClientCapabilities()) as s:
        result = await s.command("flower.continue")
        assert result["offer"] == "start"
        await s.until(lambda: shown(s))
        assert shown(s) == [f"flower: {result['message']}"] and s.offers == []


async def test_a_client_that_offers_runs_itself_gets_no_message_request_for_it(fake_lsp):
    declared = types.ClientCapabilities(
        experimental={p.EXPERIMENTAL_KEY: {**VSCODE_EXTENSIONS, "offer": True}}
    )
    async with fake_lsp(capabilities=declared) as s:
        result = await s.command("flower.continue")
        assert result["ok"] is False and result["offer"] == "start"
        await s.state()
        assert s.offers == [] and shown(s) == []


async def test_unknown_or_malformed_declarations_are_ignored(fake_lsp, script):
    script([ASK])
    odd = types.ClientCapabilities(experimental={p.EXPERIMENTAL_KEY: {"ask": "yes", "teleport": True}})
    async with fake_lsp(capabilities=odd, options={"timeout_s": 0}) as s:
        await s.until(lambda: logged(s))
        assert logged(s)[0] == "flower: ignoring capabilities.experimental.flower teleport"
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: any(m.startswith("run started") for m in logged(s)))
        assert s.asks == [] and s.events == []  # "yes" is not true: no extension is on


@pytest.mark.e2e
async def test_a_whole_run_with_the_real_engine_for_a_client_that_declares_nothing(
    sim_factory, sim_lsp, workspace
):
    from flower.sim import scenarios

    sim = sim_factory(scenarios.starter_scenario(context=78_000))
    async with sim_lsp(sim, capabilities=stock(), options={"timeout_s": 60}) as s:
        settles_when(s, lambda params: action(params, 0))
        assert (await s.command("flower.start", {"ask": "写一个 hello.py"}))["ok"] is True
        await s.until(lambda: ended(s), 180, what="the run to end")
        assert str(ended(s)).startswith("run in ws: finished (achieved) · $")

        [question] = questions_in(s)
        assert question.message.startswith(f"Flower asks (q1, ws): {scenarios.QUESTION}")
        assert [a.title for a in question.actions or []] == [*scenarios.OPTIONS, SKIP]
        assert (workspace / "hello.py").read_text(encoding="utf-8") == 'print("hello")\n'
        assert no_flower_notifications(s)

        # the log reads as the terminal: the steps, the question, both verdicts
        lines = "\n".join(logged(s))
        for step in ("确认需求", "设定目标", "干活"):
            assert f"== {step} " in lines
        assert f"  ? {scenarios.QUESTION}" in lines and "  + hello" in lines
        assert (
            "verdict, round 1: not yet, sent back to go on" in lines and "verdict, round 2: achieved" in lines
        )
        assert sum(m.startswith("context ") for m in logged(s)) >= 3
        # the meter rides on the progress bar; the verdicts still mark 目标.md
        reports = [r.message or "" for r in s.progress() if isinstance(r, types.WorkDoneProgressReport)]
        assert any(" · context " in r for r in reports)
        goal = workspace / ".flower" / "notes" / "目标.md"
        [rejected, accepted] = s.history(goal)
        assert [d.range.start.line for d in rejected] == [5] and accepted == []


async def test_a_client_that_declares_ask_but_has_no_handler_gets_the_message_request(fake_lsp, script):
    script([ASK])
    declared = stock()
    declared.experimental = {p.EXPERIMENTAL_KEY: {"ask": True}}
    async with fake_lsp(capabilities=declared) as s:

        async def no_handler(params: dict[str, Any]) -> Any:
            raise JsonRpcMethodNotFound(message="flower/ask")

        s.answer_ask = no_handler
        settles_when(s, lambda params: action(params, 0))
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: answers(s.run_dir))
        assert len(s.asks) == 1 and len(questions_in(s)) == 1
        assert answers(s.run_dir) == [{"ask": "q1", "state": "answered", "answer": "hello"}]
