"""Runs over LSP against the scripted engine: start, the meter, progress, a second start, say,
stop, continue with and without something to continue, and the resume banner."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from fake_engine import read_log
from lsprotocol import types

# what the suite's English-speaking client is shown (flower_lsp.runs)
START_ACTION = "New run…"
WHAT_TO_DO = "What should be done? One sentence is enough."


def step(name: str, index: int, total: int = 3) -> dict:
    return {"step": {"name": name, "index": index, "total": total}}


def write_brief(workspace: Path) -> Path:
    brief = workspace / ".flower" / "notes" / "需求.md"
    brief.parent.mkdir(parents=True, exist_ok=True)
    brief.write_text("## 目标\n做个 X\n", encoding="utf-8")
    return brief


async def test_a_run_streams_steps_the_context_meter_progress_and_cli_stderr(fake_lsp, script):
    script(
        [
            step("确认需求", 1),
            {"context": {"used": 5_000, "step": "确认需求", "cost_usd": 0.01}},
            {"stderr": "cli: warming up"},
            {"end_step": {"name": "确认需求", "cost_usd": 0.25}},
            step("干活", 3),
            {"context": {"used": 740_000, "step": "干活", "cost_usd": 0.5}},
            {"handoff": {"phase": "writing", "step": "干活", "used": 960_000}},
            {"handoff": {"phase": "done", "step": "干活", "generation": 2, "degraded": False}},
            {"context": {"used": 12_000, "step": "干活", "generation": 2, "cost_usd": 0.75}},
            {"text": "all done"},
            {"end_step": {"name": "干活", "cost_usd": 0.75}},
        ]
    )
    async with fake_lsp() as s:
        result = await s.command("flower.start", {"ask": "做个 X"})
        assert result == {"ok": True, "message": "Started in ws.", "offer": None, "uri": None}
        await s.until(lambda: s.run_phase() == "finished", what="the run to finish")

        assert [e["text"] for e in s.events_of("step")] == [
            "== 确认需求 ==  1/3",
            "确认需求 done (ok, $0.2500)",
            "== 干活 ==  3/3",
            "干活 done (ok, $0.7500)",
        ]
        assert any(e["kind"] == "text" and e["text"] == "all done" for e in s.events)
        meter = [(c["used"], c["step"], c["generation"], c["near"], c["handing_off"]) for c in s.contexts]
        assert meter == [
            (5_000, "确认需求", 1, False, False),
            (740_000, "干活", 1, True, False),  # past warn_at (730K of a 1M window)
            (740_000, "干活", 1, True, True),  # the handoff document is being written
            (0, "干活", 2, False, False),  # a new generation took over
            (12_000, "干活", 2, False, False),
        ]
        # cost: finished steps plus the step in flight
        assert s.contexts[1]["cost_usd"] == 0.75 and s.contexts[-1]["window"] == 1_000_000
        assert any(m.message == "[ws] cli: warming up" for m in s.client.log_messages)

        # the bar ends after the run's last event (the progress closes last): wait for its end
        await s.until(
            lambda: any(isinstance(v, types.WorkDoneProgressEnd) for v in s.progress()), what="the bar's end"
        )
        begin, *reports, end = s.progress()
        assert (
            isinstance(begin, types.WorkDoneProgressBegin)
            and begin.cancellable
            and begin.title == "Flower · ws"
        )
        assert [r.message for r in reports] == ["确认需求 1/3", "确认需求 1/3", "干活 3/3", "干活 3/3"]
        assert isinstance(end, types.WorkDoneProgressEnd) and end.message == "finished"

        state = await s.state()
        assert (state["running"], state["step"], state["index"], state["total"], state["generation"]) == (
            False,
            "干活",
            3,
            3,
            2,
        )
        assert (
            state["used"] == 12_000
            and state["woke"] == 1
            and state["steps"] == {"确认需求": "session-确认需求", "干活": "session-干活"}
        )


async def test_a_second_start_is_refused_while_one_runs(fake_lsp, script):
    script([step("干活", 3), {"wait_interrupt": 60}])
    async with fake_lsp() as s:
        first, second = await asyncio.gather(
            s.command("flower.start", {"ask": "A"}), s.command("flower.start", {"ask": "B"})
        )
        assert sorted([first["ok"], second["ok"]]) == [False, True]
        refused = first if not first["ok"] else second
        assert refused["message"].startswith("A run is already in progress in ws")
        await s.until(lambda: s.events_of("step"))
        again = await s.command("flower.start", {"ask": "C"})
        assert again["ok"] is False and "(step 干活 3/3)" in again["message"]
        assert any("already in progress" in m.message for m in s.client.messages)
        assert (await s.command("flower.continue"))["ok"] is False
        assert [e["started"] for e in read_log(s.run_dir) if "started" in e] in (["A"], ["B"])
        assert (await s.state())["running"] is True


async def test_say_interrupts_the_step_in_flight_and_goes_to_the_inbox_between_steps(
    fake_lsp, script, workspace
):
    brief = write_brief(workspace)
    script(
        [
            step("干活", 3),
            {"wait_interrupt": 30},
            {"end_step": {"name": "干活"}},
            {"mark": "between steps"},
            {"wait_mail": 30},
        ]
    )
    async with fake_lsp() as s:
        assert (await s.command("flower.say", {"text": "hello?"}))["ok"] is False  # nothing runs yet
        await s.command("flower.start", {"ask": ""})
        await s.until(lambda: s.events_of("step"))
        said = await s.command("flower.say", {"text": "用 Python 3.12"})
        assert said == {
            "ok": True,
            "message": "Delivered: the step resumed with your words.",
            "offer": None,
            "uri": None,
        }
        await s.until(lambda: any(e.get("mark") == "between steps" for e in read_log(s.run_dir)))
        mailed = await s.command("flower.say", {"text": "顺便写个 README"})
        assert mailed["ok"] and "inbox" in mailed["message"]
        await s.until(lambda: s.run_phase() == "finished")
        log = read_log(s.run_dir)
        assert {"interrupt": ["用 Python 3.12"]} in log and {"mail": ["顺便写个 README"]} in log
        assert [e["text"] for e in s.events_of("mail")] == ["顺便写个 README"]
        assert "顺便写个 README" in brief.read_text(encoding="utf-8")  # the inbox also amends 需求.md


async def test_stop_keeps_the_state_and_continue_wakes_it_with_the_banner(fake_lsp, script, workspace):
    script([{"brief": "## 目标\n做个 X\n"}, step("确认需求", 1), {"wait_interrupt": 60}])
    async with fake_lsp() as s:
        await s.command("flower.start", {"ask": "做个 X"})
        await s.until(lambda: s.events_of("step"))
        stopped = await s.command("flower.stop")
        assert stopped["ok"] and stopped["message"].startswith("Stopped the run in ws")
        assert s.run_phase() == "stopped"
        log = read_log(s.run_dir)
        assert {"cancelled": True} in log and {"closed": True} in log
        await s.until(
            lambda: any(isinstance(v, types.WorkDoneProgressEnd) for v in s.progress()), what="the end"
        )
        assert s.progress()[-1].message == "stopped"
        state = await s.state()
        assert (state["running"], state["waking"], state["woke"], state["steps"]) == (
            False,
            True,
            1,
            {"确认需求": "session-确认需求"},
        )
        assert (await s.command("flower.stop"))["ok"] is False  # nothing left to stop

        script([step("干活", 3), {"end_step": {"name": "干活"}}])
        resumed = await s.command("flower.continue")
        assert resumed["ok"] and resumed["message"] == "Continuing in ws."
        await s.until(lambda: s.run_phase() == "finished")
        assert s.banners == [
            {
                "folder": s.folder,
                "text": f"<- 在 {workspace} 接上上次  需求已确认 · 第 2 次唤醒",
                "stopped": None,
            }
        ]
        assert s.events_of("step")[-2]["text"] == "== 干活 ==  3/3  <- continued · wake 2"
        assert [e["started"] for e in read_log(s.run_dir) if "started" in e] == ["做个 X", ""]


async def test_cancelling_the_progress_bar_stops_the_run(fake_lsp, script):
    script([step("干活", 3), {"wait_interrupt": 60}])
    async with fake_lsp() as s:
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: s.client.progress_reports and s.events_of("step"))
        [token] = s.client.progress_reports
        s.client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
        await s.until(lambda: s.run_phase() == "stopped", what="the run to stop")
        assert s.events_of("run")[-1]["text"] == "cancelled from the progress bar"
        assert {"cancelled": True} in read_log(s.run_dir)


async def test_a_cancel_pressed_as_the_bar_is_created_stops_the_run(fake_lsp, script):
    """VS Code shows the bar, Cancel included, as soon as the server asks to create it: the cancel
    can reach the server before the create request's answer does."""
    script([step("干活", 3), {"wait_interrupt": 60}])
    async with fake_lsp() as s:
        features = s.client.protocol.fm.features
        create = features[types.WINDOW_WORK_DONE_PROGRESS_CREATE]

        def create_then_cancel(*args: Any) -> Any:
            params = args[-1]
            s.client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=params.token))
            return create(*args)  # the answer goes out after the cancel

        features[types.WINDOW_WORK_DONE_PROGRESS_CREATE] = create_then_cancel
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: s.run_phase() == "stopped", what="the run to stop")
        assert s.events_of("run")[-1]["text"] == "cancelled from the progress bar"
        # and the bar the client shows is ended
        [token] = s.client.progress_reports
        await s.until(
            lambda: any(getattr(v, "kind", "") == "end" for v in s.client.progress_reports[token]),
            what="the bar to end",
        )


async def test_continue_with_nothing_to_continue_offers_to_start(fake_lsp, script):
    script([{"mark": "ran"}])
    async with fake_lsp() as s:
        s.answer_offer = lambda params: types.MessageActionItem(title=START_ACTION)

        async def person(params):
            return {"answer": "写个 hello.py"}

        s.answer_ask = person
        result = await s.command("flower.continue")
        assert (
            result["ok"] is False
            and result["offer"] == "start"
            and "Nothing to continue in ws" in result["message"]
        )
        await s.until(lambda: s.run_phase() == "finished")
        assert s.offers[0].message == "Nothing to continue in ws. Start a new run?"
        assert (
            s.asks[0]["question"] == WHAT_TO_DO
            and s.asks[0]["options"] == []
            and s.asks[0]["free_text"] is True
        )
        assert [e["started"] for e in read_log(s.run_dir) if "started" in e] == ["写个 hello.py"]
        # a start without a request on a folder that cannot be continued is refused the same way
        empty = await s.command("flower.start", {"ask": "  "})
        assert empty["ok"] is False and empty["offer"] == "start"


async def test_the_banner_comes_on_initialized_when_there_is_something_to_continue(fake_lsp, workspace):
    async with fake_lsp() as s:
        await s.state()
        await asyncio.sleep(0.5)
        assert s.banners == []
    write_brief(workspace)
    async with fake_lsp() as s:
        await s.until(lambda: s.banners)
        assert s.banners == [
            {
                "folder": s.folder,
                "text": f"<- 在 {workspace} 接上上次  需求已确认 · 第 1 次唤醒",
                "stopped": None,
            }
        ]


async def test_a_say_the_step_could_not_take_is_answered_not_delivered_with_the_reason(
    fake_lsp, script, workspace
):
    write_brief(workspace)
    script(
        [
            step("干活", 3),
            {"refuse_interrupt": {"within": 30, "why": "Prompt is too long"}},
            {"wait_interrupt": 30},
            {"end_step": {"name": "干活"}},
        ]
    )
    async with fake_lsp() as s:
        await s.command("flower.start", {"ask": ""})
        await s.until(lambda: s.events_of("step"))
        refused = await s.command("flower.say", {"text": "一大段话"})
        assert refused["ok"] is False
        assert refused["message"].startswith("Not delivered: Prompt is too long.")
        assert "put it in a file" in refused["message"]
        delivered = await s.command("flower.say", {"text": "短一点"})
        assert delivered["ok"] and delivered["message"] == "Delivered: the step resumed with your words."
        await s.until(lambda: s.run_phase() == "finished")


async def test_a_say_over_the_message_bound_is_refused_naming_the_limit(fake_lsp, script, workspace):
    write_brief(workspace)
    script([step("干活", 3), {"wait_interrupt": 120}, {"end_step": {"name": "干活"}}])
    async with fake_lsp() as s:
        await s.command("flower.start", {"ask": ""})
        await s.until(lambda: s.events_of("step"))
        huge = "说" * (6 * 1024 * 1024)  # 6 M characters: 36 MiB on the line the CLI would get
        refused = await s.command("flower.say", {"text": huge}, timeout=120)
        assert refused["ok"] is False
        assert refused["message"].startswith("Too long to say (36 MiB); words can be at most 16 MiB")
        assert "FLOWER_MAX_MESSAGE_MB" in refused["message"]
        assert (await s.state())["running"] is True  # the run goes on, the words were not taken
        assert {"interrupt": [huge]} not in read_log(s.run_dir)
        assert (await s.command("flower.say", {"text": "好了"}))["ok"] is True
        await s.until(lambda: s.run_phase() == "finished")
        assert {"interrupt": ["好了"]} in read_log(s.run_dir)


async def test_a_say_as_the_step_ends_goes_to_the_inbox_and_one_after_the_run_is_refused(
    fake_lsp, script, workspace
):
    brief = write_brief(workspace)
    # the step ends with the words still unheard: they are mailed instead of dropped
    script([step("干活", 3), {"sleep": 1}, {"end_step": {"name": "干活"}}, {"wait_mail": 30}])
    async with fake_lsp() as s:
        await s.command("flower.start", {"ask": ""})
        await s.until(lambda: s.events_of("step"))
        said = await s.command("flower.say", {"text": "最后一句"})
        assert said["ok"] and "inbox" in said["message"], said
        await s.until(lambda: s.run_phase() == "finished")
        assert {"mail": ["最后一句"]} in read_log(s.run_dir)
        assert "最后一句" in brief.read_text(encoding="utf-8")
        after = await s.command("flower.say", {"text": "还在吗"})
        assert after == {
            "ok": False,
            "message": "Nothing is running in ws: continue or start a run first.",
            "offer": None,
            "uri": None,
        }


async def test_a_say_between_steps_too_long_for_the_inbox_is_refused_naming_the_limit(
    fake_lsp, script, workspace
):
    brief = write_brief(workspace)
    script([step("干活", 3), {"end_step": {"name": "干活"}}, {"mark": "between steps"}, {"wait_mail": 30}])
    async with fake_lsp() as s:
        await s.command("flower.start", {"ask": ""})
        await s.until(lambda: any(e.get("mark") == "between steps" for e in read_log(s.run_dir)))
        refused = await s.command("flower.say", {"text": "长" * 100_001})
        assert refused["ok"] is False
        assert refused["message"].startswith("Too long for the inbox (100001 characters; at most 100000")
        assert (await s.command("flower.say", {"text": "短的"}))["ok"] is True
        await s.until(lambda: s.run_phase() == "finished")
        assert {"mail": ["短的"]} in read_log(s.run_dir)
        assert "长长" not in brief.read_text(encoding="utf-8")  # nothing of the refused words kept
