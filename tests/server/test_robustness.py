"""Bad input never crashes the server: wrong command arguments, unknown methods, bad options, a
workspace it cannot write, a client that disconnects or shuts down mid-run, stray output on
stdout. Plus flower.openDocument, which must cope with documents that do not exist yet."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest
from clients import VSCODE_EXTENSIONS
from fake_engine import read_log
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcMethodNotFound

from flower_lsp import protocol as p
from flower_lsp.documents import uri_of

BAD_COMMANDS: list[tuple[str, list[Any], str]] = [
    ("flower.start", [{"ask": 42}], "flower.start.ask: expected a string, got a number"),
    ("flower.start", [{"ask": "x", "asap": True}], "flower.start: unknown field(s) asap"),
    ("flower.start", [{"new": True}], "flower.start: missing required field 'ask'"),
    ("flower.start", ["做个 X"], "flower.start: expected an object, got a string"),
    (
        "flower.say",
        [{"text": "a"}, {"text": "b"}],
        "flower.say: expected at most one argument (an object), got 2",
    ),
    ("flower.say", [{"text": "   "}], "flower.say: 'text' must not be empty"),
    (
        "flower.openDocument",
        [{"which": "readme"}],
        "flower.openDocument.which: must be one of 'brief', 'goal', 'handoff'",
    ),
    (
        "flower.stop",
        [{"folder": "file:///no/such/folder"}],
        "unknown workspace folder 'file:///no/such/folder'",
    ),
    ("flower.answer", [{"id": "q1"}], "flower.answer: missing required field 'text'"),
    ("flower.nope", [], "Command name 'flower.nope' is not defined"),
]


async def test_wrong_arguments_are_invalid_params_with_a_clear_message(fake_lsp):
    async with fake_lsp() as s:
        for command, args, message in BAD_COMMANDS:
            with pytest.raises(JsonRpcInvalidParams) as caught:
                await s.command(command, *args)
            assert caught.value.code == -32602 and message in caught.value.message, (
                command,
                caught.value.message,
            )
        with pytest.raises(JsonRpcInvalidParams, match="flower/state: unknown field"):
            await s.request("flower/state", {"folder": None, "verbose": True})
        assert (await s.state())["running"] is False


async def test_unknown_methods_are_answered_or_ignored(fake_lsp):
    async with fake_lsp() as s:
        with pytest.raises(JsonRpcMethodNotFound):
            await s.request("flower/teleport", {"to": "mars"})
        s.client.protocol.notify("flower/ping", {"x": 1})
        s.client.protocol.notify("$/someClientThing", None)
        assert (await s.state())["folder"] == s.folder


async def test_bad_initialization_options_fall_back_to_the_defaults(fake_lsp, script):
    script([{"ask": {"question": "q?", "options": []}}])
    async with fake_lsp(options={"timeout_s": "soon", "colour": "red"}) as s:
        await s.until(lambda: s.client.messages)
        assert "ignoring initializationOptions" in s.client.messages[0].message
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: s.asks)
        assert s.asks[0]["timeout_s"] == 1800.0


async def test_a_workspace_that_cannot_be_written_is_refused_not_fatal(fake_lsp, workspace):
    if os.geteuid() == 0:
        (workspace / ".flower").write_text("a file where the workbench should be")  # root ignores mode bits
    else:
        workspace.chmod(0o555)
    try:
        async with fake_lsp() as s:
            result = await s.command("flower.start", {"ask": "X"})
            assert result["ok"] is False and result["message"].startswith("flower: cannot start in ws:")
            assert any(
                m.type == types.MessageType.Error and "cannot start in ws" in m.message
                for m in s.client.messages
            )
            assert (await s.state())["running"] is False
            assert (await s.command("flower.continue"))["ok"] is False
    finally:
        workspace.chmod(0o755)


async def test_a_client_that_disconnects_mid_run_leaves_the_run_closed_cleanly(fake_lsp, script):
    script([{"step": {"name": "干活", "index": 1, "total": 1}}, {"wait_interrupt": 60}])
    async with fake_lsp() as s:
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: s.events_of("step"))
        server = s.client._server
        server.stdin.close()  # the editor went away without a word
        await asyncio.wait_for(server.wait(), 30)
        log = read_log(s.run_dir)
        assert {"cancelled": True} in log and {"closed": True} in log


async def test_shutdown_mid_run_stops_the_run_first(fake_lsp, script):
    script([{"step": {"name": "干活", "index": 1, "total": 1}}, {"wait_interrupt": 60}])
    async with fake_lsp() as s:
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: s.events_of("step"))
        await asyncio.wait_for(s.client.shutdown_session(), 30)
        assert s.client._server.returncode == 0
        log = read_log(s.run_dir)
        assert {"cancelled": True} in log and {"closed": True} in log


async def test_stray_output_never_reaches_the_protocol_channel(fake_lsp, script, capfd):
    script([{"print": "a careless print"}, {"mark": "printed"}])
    async with fake_lsp() as s:
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: s.run_phase() == "finished")
        assert {"mark": "printed"} in read_log(s.run_dir)
        assert s.client.error is None and (await s.state())["running"] is False
    # both the Python print and the child process's echo went to stderr (forwarded by pytest-lsp)
    assert capfd.readouterr().err.count("a careless print") == 2


async def test_open_document_shows_what_exists_and_says_what_does_not(fake_lsp, script, workspace):
    notes = workspace / ".flower" / "notes"
    async with fake_lsp() as s:
        missing = await s.command("flower.openDocument", {"which": "goal"})
        assert missing == {
            "ok": False,
            "message": "There is no 目标.md in ws yet.",
            "offer": None,
            "uri": None,
        }
        notes.mkdir(parents=True)
        for name in ("需求.md", "目标.md"):
            (notes / name).write_text("# x\n", encoding="utf-8")
        for which, name in (("brief", "需求.md"), ("goal", "目标.md")):
            shown = await s.command("flower.openDocument", {"which": which})
            assert shown["ok"] is True and shown["uri"] == uri_of(notes / name)
        assert [d.uri for d in s.client.shown_documents] == [
            uri_of(notes / "需求.md"),
            uri_of(notes / "目标.md"),
        ]
        assert s.client.shown_documents[0].take_focus is True
        assert (await s.command("flower.openDocument", {"which": "handoff"}))["ok"] is False
        handoff = notes / "交接-干活.md"
        handoff.write_text("# 交接\n", encoding="utf-8")
        assert (await s.command("flower.openDocument", {"which": "handoff"}))["uri"] == uri_of(handoff)
        assert uri_of(notes / "目标.md").endswith("/.flower/notes/%E7%9B%AE%E6%A0%87.md")


async def test_a_client_without_progress_support_still_runs(fake_lsp, script):
    script([{"step": {"name": "干活", "index": 1, "total": 1}}, {"end_step": {"name": "干活"}}])
    bare = types.ClientCapabilities(experimental={p.EXPERIMENTAL_KEY: VSCODE_EXTENSIONS})
    async with fake_lsp(capabilities=bare) as s:
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: s.run_phase() == "finished")
        assert s.client.progress_reports == {} and len(s.events_of("step")) == 2
