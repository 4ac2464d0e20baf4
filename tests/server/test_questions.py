"""HumanChannel asks as flower/ask requests: answered, dismissed, a client error, a malformed reply,
no reply at all (the channel's timeout applies and the request is withdrawn), and an answer
that arrives by command while the client's prompt is still open."""

from __future__ import annotations

import asyncio

from clients import HeldOpen
from fake_engine import read_log

ASK = {"ask": {"question": "hello.py 要打印什么?", "options": ["hello", "hello, flower"]}}


def answers(run_dir) -> list[dict]:
    return [{k: e[k] for k in ("ask", "state", "answer")} for e in read_log(run_dir) if "ask" in e]


async def test_an_answer_reaches_the_engine(fake_lsp, script):
    script([ASK])
    async with fake_lsp(options={"timeout_s": 42}) as s:

        async def person(params):
            return {"answer": params["options"][1]}

        s.answer_ask = person
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: s.run_phase() == "finished")
        assert s.asks == [
            {
                "folder": s.folder,
                "id": "q1",
                "question": "hello.py 要打印什么?",
                "options": ["hello", "hello, flower"],
                "free_text": True,
                "timeout_s": 42.0,
            }
        ]
        assert answers(s.run_dir) == [{"ask": "q1", "state": "answered", "answer": "hello, flower"}]
        assert [e["text"] for e in s.events_of("ask")] == [
            "? hello.py 要打印什么?",
            "? hello.py 要打印什么? -> answered: hello, flower",
        ]


async def test_a_dismissal_declines(fake_lsp, script):
    script([ASK])
    async with fake_lsp() as s:

        async def person(params):
            return {"dismissed": True}

        s.answer_ask = person
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: s.run_phase() == "finished")
        assert answers(s.run_dir) == [{"ask": "q1", "state": "declined", "answer": "dismissed in the editor"}]


async def test_a_client_error_or_a_malformed_reply_leaves_the_channels_timeout(fake_lsp, script):
    script([ASK, ASK])
    async with fake_lsp(options={"timeout_s": 1}) as s:
        replies = iter([RuntimeError("the quick pick crashed"), {"answer": 5}])

        async def person(params):
            reply = next(replies)
            if isinstance(reply, Exception):
                raise reply
            return reply

        s.answer_ask = person
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: s.run_phase() == "finished")
        assert [a["state"] for a in answers(s.run_dir)] == ["timeout", "timeout"]
        assert any(
            "ignoring a malformed answer to q2: flower/ask result.answer: expected a string, got a number"
            in m.message
            for m in s.client.log_messages
        )
        assert (await s.state())["running"] is False


async def test_a_client_that_never_answers_gets_its_request_withdrawn_at_the_timeout(fake_lsp, script):
    script([ASK])
    async with fake_lsp(options={"timeout_s": 1}) as s:
        s.answer_ask = never = HeldOpen()
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: s.run_phase() == "finished")
        assert answers(s.run_dir) == [{"ask": "q1", "state": "timeout", "answer": ""}]
        await asyncio.wait_for(never.withdrawn.wait(), 10)  # the server sent $/cancelRequest


async def test_an_answer_by_command_settles_the_ask_and_withdraws_the_prompt(fake_lsp, script):
    script([ASK, {"mark": "after"}])
    async with fake_lsp() as s:
        s.answer_ask = slow = HeldOpen()
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: s.asks)
        state = await s.state()
        assert [a["id"] for a in state["pending"]] == ["q1"]
        result = await s.command("flower.answer", {"id": "q1", "text": "hello"})
        assert result == {"ok": True, "message": "Answered q1.", "offer": None, "uri": None}
        await s.until(lambda: s.run_phase() == "finished")
        assert answers(s.run_dir) == [{"ask": "q1", "state": "answered", "answer": "hello"}]
        await asyncio.wait_for(slow.withdrawn.wait(), 10)
        late = await s.command("flower.answer", {"id": "q1", "text": "again"})
        assert late["ok"] is False
