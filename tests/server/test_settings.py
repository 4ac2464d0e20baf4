"""The server's options: per workspace folder in initializationOptions, changed while it runs by
workspace/didChangeConfiguration (applied from the next run, and said so), bad ones refused with
the old ones kept, and the empty Lua table `[]` read as `{}`."""

from __future__ import annotations

from clients import HeldOpen
from fake_engine import read_log
from lsprotocol import types

ASK = {"ask": {"question": "hello.py 要打印什么?", "options": ["hello"]}}


def change(s, settings) -> None:
    s.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=settings))


def timeouts(s) -> list[float | None]:
    return [a["timeout_s"] for a in s.asks]


async def test_a_folders_own_options_replace_the_top_level_ones_for_it(fake_lsp, script, workspace):
    script([ASK])
    options = {"timeout_s": 1800, "folders": {workspace.as_uri(): {"timeout_s": 1, "run_dir": "elsewhere"}}}
    async with fake_lsp(options=options) as s:
        state = await s.state()
        assert state["run_dir"] == str(workspace / "elsewhere")
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: s.run_phase() == "finished")
        assert timeouts(s) == [1.0]
        assert [e["state"] for e in read_log(workspace / "elsewhere") if "ask" in e] == ["timeout"]


async def test_a_changed_setting_applies_from_the_next_run_and_the_server_says_so(fake_lsp, script):
    script([ASK])
    async with fake_lsp(options={"timeout_s": 1800}) as s:
        s.answer_ask = lambda params: _answer("hello")
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: s.run_phase() == "finished")

        change(s, {"flower": {"timeout_s": 1, "window": 200_000}})
        await s.until(lambda: [m for m in s.client.log_messages if "settings of ws changed" in m.message])
        [said] = [m.message for m in s.client.log_messages if "settings of ws changed" in m.message]
        assert said == (
            "flower: settings of ws changed (timeout_s: 1800.0 -> 1.0; window: null -> 200000):"
            " applied live, from the next run"
        )
        s.answer_ask = HeldOpen()
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: len(s.events_of("run")) == 4 and s.run_phase() == "finished")
        assert timeouts(s) == [1800.0, 1.0]
        assert [e["state"] for e in read_log(s.run_dir) if "ask" in e] == ["answered", "timeout"]


async def test_a_change_during_a_run_leaves_the_run_its_settings(fake_lsp, script):
    script([{"step": {"name": "干活", "index": 1, "total": 1}}, {"wait_interrupt": 60}])
    async with fake_lsp() as s:
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: s.events_of("step"))
        change(s, {"flower": {"timeout_s": 5}})
        await s.until(lambda: [m for m in s.client.log_messages if "settings of ws changed" in m.message])
        assert any(
            m.message.endswith("; the run in progress keeps the settings it started with")
            for m in s.client.log_messages
        )
        await s.command("flower.stop")


async def test_bad_settings_are_refused_and_the_old_ones_kept(fake_lsp, script):
    script([ASK])
    async with fake_lsp(options={"timeout_s": 1}) as s:
        change(s, {"flower": {"timeout_s": "soon"}})
        change(s, {"flower": {"folders": {"file:///x": {"folders": {"file:///y": {}}}}}})
        change(s, {"editor": {"fontSize": 12}})  # another tool's section: none of ours
        await s.until(lambda: len(s.client.messages) == 2)
        assert [m.message for m in s.client.messages] == [
            "flower: ignoring the new settings, the old ones stay"
            " (settings.flower.timeout_s: expected a number, got a string)",
            "flower: ignoring the new settings, the old ones stay"
            " (settings.flower.folders.file:///x: a folder's options cannot name folders)",
        ]
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: s.asks)
        assert timeouts(s) == [1.0]


async def test_an_empty_lua_table_is_read_as_no_options(fake_lsp, script):
    script([ASK])
    async with fake_lsp(options=[]) as s:
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: s.asks)
        # no word about the options: the one message is the question's notice (flower.core.notices)
        assert timeouts(s) == [1800.0]
        assert [m.message for m in s.client.messages] == [f"flower · asking you: {ASK['ask']['question']}"]


async def _answer(text: str) -> dict[str, str]:
    return {"answer": text}
