"""flower.aside over LSP against the scripted engine: the oracle is shown the folder's recent
events, its answer is the command's result, a failure is a result too, and the run goes on."""

from __future__ import annotations

import json

import pytest
from fake_engine import read_log
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import client_capabilities

from flower.sim.scenarios import ASIDE_ANSWER, starter_scenario


def step(name: str, index: int) -> dict:
    return {"step": {"name": name, "index": index, "total": 3}}


async def test_a_side_question_during_a_run_is_answered_and_the_run_goes_on(fake_lsp, script):
    script(
        [
            step("干活", 3),
            {"context": {"used": 5_000, "step": "干活", "cost_usd": 0.01}},
            {"text": "正在写 hello.py"},
            {"wait_interrupt": 20},
            {"text": "接着写完了"},
        ]
    )
    async with fake_lsp() as s:
        await s.command("flower.start", {"ask": "做个 X"})
        await s.until(lambda: any(e["text"] == "正在写 hello.py" for e in s.events), what="the text")

        result = await s.command("flower.aside", {"question": "现在到哪一步了"})

        assert result == {
            "ok": True,
            "message": "aside ($0.0123, the running run was not disturbed): saw 2 events",
            "answer": "saw 2 events\nlast: [text] 正在写 hello.py",
            "cost_usd": 0.0123,
        }
        [asked] = [e for e in read_log(s.run_dir) if "aside" in e]
        assert asked["recent"] == ["[step] 干活", "[text] 正在写 hello.py"]  # no context readings
        assert (await s.state())["running"] is True  # still in flight: nobody waited for anybody
        await s.command("flower.say", {"text": "继续"})
        await s.until(lambda: s.run_phase() == "finished", what="the run to finish")
        assert any(e["text"] == "接着写完了" for e in s.events)


async def test_a_failed_side_question_is_a_result_and_an_empty_one_is_refused(fake_lsp, script):
    script([step("干活", 3), {"text": "done"}])
    async with fake_lsp() as s:
        result = await s.command("flower.aside", {"question": "this will fail"})
        assert result["ok"] is False
        assert result["message"] == "the side question failed: APIError: the oracle could not answer"
        assert result["answer"] == "" and result["cost_usd"] == 0.0
        with pytest.raises(JsonRpcInvalidParams, match="'question' must not be empty"):
            await s.command("flower.aside", {"question": "  "})


async def test_after_the_run_the_oracle_still_sees_its_last_events(fake_lsp, script):
    script([step("确认需求", 1), {"text": "问清了"}, step("干活", 3), {"text": "做完了"}])
    async with fake_lsp() as s:
        await s.command("flower.start", {"ask": "做个 X"})
        await s.until(lambda: s.run_phase() == "finished", what="the run to finish")
        result = await s.command("flower.aside", {"question": "做完了吗"})
        assert result["ok"] and result["answer"].endswith("last: [text] 做完了")


async def test_the_real_engine_asks_the_oracle_in_books_of_its_own(sim_factory, sim_lsp, workspace):
    sim = sim_factory(starter_scenario())
    async with sim_lsp(sim) as s:
        result = await s.command("flower.aside", {"question": "现在到哪一步了"}, timeout=120)

    assert result["ok"] is True and result["answer"] == ASIDE_ANSWER and result["cost_usd"] > 0
    [asked] = sim.requests_for("oracle")
    assert "人顺路问了一句:现在到哪一步了" in asked.first_user_text
    rows = json.loads((workspace / "runs" / "aside" / "manifest.json").read_text(encoding="utf-8"))
    assert [r["step"] for r in rows] == ["旁路问答"] and rows[0]["cost_usd"] == result["cost_usd"]
    assert not (workspace / "runs" / "manifest.json").exists()  # the folder's own books: untouched
    assert not (workspace / ".flower").exists()  # a question makes no workbench


@pytest.mark.parametrize("fails", [False, True], ids=["answered", "failed"])
async def test_a_client_that_shows_no_results_is_shown_the_side_answer(fake_lsp, script, fails):
    script([step("干活", 3), {"text": "done"}])
    async with fake_lsp(capabilities=client_capabilities("visual-studio-code")) as s:
        question = "this will fail" if fails else "现在到哪一步了"
        result = await s.command("flower.aside", {"question": question})
        await s.until(lambda: any(m.message == result["message"] for m in s.client.messages))
        if not fails:
            await s.until(lambda: any(m.message.startswith("# aside\n") for m in s.client.log_messages))
            [logged] = [m.message for m in s.client.log_messages if m.message.startswith("# aside\n")]
            assert logged == f"# aside\n{result['answer']}"
