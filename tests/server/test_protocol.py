"""protocol.py is the one definition of the custom protocol: the generated TypeScript carries all of
it, the server registers exactly its commands, and payloads are checked field by field (wire.py).
That the committed generated files are fresh is the `make generate-check` gate's
(tests/unit/test_generated.py tests the gate)."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys

import pytest

from flower_lsp import gen_typescript, reference, wire
from flower_lsp import protocol as p
from flower_lsp.negotiation import declared
from flower_lsp.server import build_server


def _interface(ts: str, name: str) -> str:
    m = re.search(rf"export interface {name} \{{\n(.*?)\n\}}", ts, re.S)
    assert m, f"interface {name} missing from the generated TypeScript"
    return m.group(1)


def test_generated_typescript_lists_every_method_and_every_field() -> None:
    ts = gen_typescript.typescript()
    for method in p.METHODS:
        assert f'export const {method.const} = "{method.name}";' in ts
        assert f'"{method.name}": {{ params: ' in ts
    for cls in p.PAYLOADS:
        body = _interface(ts, cls.__name__)
        declared = re.findall(r"^  (\w+)(\??): ", body, re.M)
        fields = dataclasses.fields(cls)
        assert [name for name, _ in declared] == [f.name for f in fields]
        for (name, optional), f in zip(declared, fields, strict=True):
            has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            assert (optional == "?") == has_default, f"{cls.__name__}.{name}"
            assert f.metadata.get("doc"), f"{cls.__name__}.{name} has no doc"
    commands = re.search(r"export const COMMANDS = \[(.*?)\] as const;", ts)
    assert commands is not None
    assert commands.group(1).split(", ") == [m.const for m in p.METHODS if m.kind == "command"]


def test_field_types_are_spelled_for_typescript() -> None:
    ts = gen_typescript.typescript()
    assert "  options: string[];" in _interface(ts, "AskParams")
    assert "  timeout_s: number | null;" in _interface(ts, "AskParams")
    assert "  which: DocumentName;" in _interface(ts, "OpenDocumentArgs")
    assert "  verdict: VerdictInfo | null;" in _interface(ts, "StateResult")
    assert "  pending: AskParams[];" in _interface(ts, "StateResult")
    assert "  payload: Record<string, unknown>;" in _interface(ts, "EventParams")
    assert 'export type DocumentName = "brief" | "goal" | "handoff";' in ts


def test_the_module_prints_the_typescript() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "flower_lsp.gen_typescript"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == gen_typescript.typescript()


def test_the_server_registers_exactly_the_protocols_commands() -> None:
    server = build_server(engine=object())  # type: ignore[arg-type]
    assert sorted(server.protocol.fm.commands) == sorted(p.COMMANDS)
    assert p.STATE in server.protocol.fm.features


def test_payloads_are_checked_field_by_field() -> None:
    assert wire.from_json(p.StartArgs, {"ask": "做个 X", "new": True}) == p.StartArgs(ask="做个 X", new=True)
    assert wire.from_json(p.ContinueArgs, None) == p.ContinueArgs()
    assert wire.from_json(p.AskResult, {"answer": None}) == p.AskResult()
    cases = [
        (p.StartArgs, {}, "StartArgs: missing required field 'ask'"),
        (p.StartArgs, {"ask": 3}, "StartArgs.ask: expected a string, got a number"),
        (p.StartArgs, {"ask": "x", "new": "yes"}, "StartArgs.new: expected a boolean, got a string"),
        (p.StartArgs, {"ask": "x", "asap": True}, "StartArgs: unknown field(s) asap"),
        (
            p.OpenDocumentArgs,
            {"which": "readme"},
            "OpenDocumentArgs.which: must be one of 'brief', 'goal', 'handoff', got 'readme'",
        ),
        (p.SayArgs, ["hi"], "SayArgs: expected an object, got an array"),
        (p.AskResult, {"answer": ["a"]}, "AskResult.answer: expected a string, got an array"),
        (p.InitOptions, {"timeout_s": "soon"}, "InitOptions.timeout_s: expected a number, got a string"),
    ]
    for cls, value, message in cases:
        with pytest.raises(wire.ProtocolError) as caught:
            wire.from_json(cls, value)
        assert str(caught.value).startswith(message)


def test_commands_take_at_most_one_argument() -> None:
    assert wire.command_args(p.SayArgs, p.SAY, ({"text": "hi"},)) == p.SayArgs(text="hi")
    with pytest.raises(
        wire.ProtocolError, match=r"flower.say: expected at most one argument \(an object\), got 2"
    ):
        wire.command_args(p.SayArgs, p.SAY, ({"text": "a"}, {"text": "b"}))


def test_to_json_nests_dataclasses() -> None:
    verdict = p.VerdictInfo(state="not_yet", reason="r", failed=["x"], round=1, goal_path="/g")
    assert wire.to_json(p.CommandResult(ok=True, message="m")) == {
        "ok": True,
        "message": "m",
        "offer": None,
        "uri": None,
    }
    nested = wire.to_json({"v": verdict})
    assert isinstance(nested, dict) and isinstance(nested["v"], dict) and nested["v"]["failed"] == ["x"]


def test_every_method_says_what_a_client_without_it_gets() -> None:
    assert set(p.FALLBACKS) == {m.name for m in p.METHODS}, "add the method's fallback to protocol.FALLBACKS"
    assert all(text.strip() for text in p.FALLBACKS.values())


def test_the_reference_documents_every_method_payload_and_field() -> None:
    doc = reference.markdown()
    for m in p.METHODS:
        assert f"### `{m.name}`" in doc and f"- Fallback: {p.FALLBACKS[m.name]}" in doc
    for cls in p.PAYLOADS:
        section = doc.split(f"### {cls.__name__}\n", 1)[1].split("\n#", 1)[0]
        assert [line.split("`")[1] for line in section.splitlines() if line.startswith("| `")] == [
            f.name for f in dataclasses.fields(cls)
        ]
    assert "| `timeout_s` | `number \\| null` | `1800.0` |" in doc


def test_the_reference_module_prints_the_reference() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "flower_lsp.reference"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == reference.markdown()


def test_the_names_of_each_kind_of_method_are_typed_for_the_extension() -> None:
    ts = gen_typescript.typescript()
    kinds = {
        "CommandName": ("command", "client->server"),
        "RequestName": ("request", "client->server"),
        "NotificationName": ("notification", "server->client"),
        "ServerRequestName": ("request", "server->client"),
    }
    named = []
    for name, (kind, direction) in kinds.items():
        union = re.search(rf"^export type {name} = (.*);$", ts, re.M)
        assert union is not None, name
        expected = [f"typeof {m.const}" for m in p.METHODS if (m.kind, m.direction) == (kind, direction)]
        assert union.group(1).split(" | ") == expected
        named += expected
    # every method is of exactly one kind: the extension can call or handle each
    assert sorted(named) == sorted(f"typeof {m.const}" for m in p.METHODS)


def test_the_declared_extensions_are_read_leniently() -> None:
    every = {f.name: True for f in dataclasses.fields(p.FlowerCapabilities)}
    assert declared({p.EXPERIMENTAL_KEY: every}) == (p.FlowerCapabilities(**every), ())
    assert declared(None) == (p.FlowerCapabilities(), ())
    assert declared([]) == (p.FlowerCapabilities(), ())  # Lua's empty table
    assert declared({p.EXPERIMENTAL_KEY: []}) == (p.FlowerCapabilities(), ())
    assert declared({p.EXPERIMENTAL_KEY: {"ask": 1, "banner": True, "x": True}}) == (
        p.FlowerCapabilities(banner=True),
        ("x",),
    )


def test_an_empty_array_reads_as_the_empty_object() -> None:
    assert wire.from_json(p.StateParams, []) == p.StateParams()
    assert wire.command_args(p.StopArgs, p.STOP, ([],)) == p.StopArgs()
    assert wire.from_json(p.InitOptions, {"folders": []}) == p.InitOptions()
    with pytest.raises(wire.ProtocolError, match="StartArgs: missing required field 'ask'"):
        wire.from_json(p.StartArgs, [])
