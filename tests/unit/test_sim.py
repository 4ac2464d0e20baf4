"""flower.sim as an HTTP server: the protocol surface, scenario handling and recording."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from flower.sim import lsp_pipe
from flower.sim.fixtures import ForbiddenNetworkAccess
from flower.sim.scenario import Scenario, ScenarioError
from flower.sim.server import SimServer


def post(sim: SimServer, path: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, Any, str]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(
        sim.base_url + path,
        data=data,
        method="POST",
        headers={"content-type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            raw = resp.read().decode()
            kind = resp.headers.get("content-type", "")
            return resp.status, (json.loads(raw) if "json" in kind else None), raw
    except urllib.error.HTTPError as err:
        raw = err.read().decode()
        return err.code, json.loads(raw), raw


def msg(text: str = "hi", **kw: Any) -> dict[str, Any]:
    return {"model": "claude-test", "max_tokens": 100, "messages": [{"role": "user", "content": text}], **kw}


def sse_events(raw: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for chunk in raw.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in chunk.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_plain_json_reply_echoes_the_model_and_reports_usage(sim_factory):
    sim = sim_factory({"scripts": {"main": [{"text": "hello"}]}})
    status, body, _ = post(sim, "/v1/messages", msg())
    assert status == 200
    assert body["model"] == "claude-test"
    assert body["content"] == [{"type": "text", "text": "hello"}]
    assert body["stop_reason"] == "end_turn"
    assert body["usage"]["input_tokens"] > 0


def test_streaming_reply_has_the_event_sequence_the_cli_needs(sim_factory):
    sim = sim_factory(
        {"scripts": {"main": [{"text": "hi there", "tool": {"name": "Bash", "input": {"command": "ls"}}}]}}
    )
    status, _, raw = post(sim, "/v1/messages?beta=true", msg(stream=True))
    events = sse_events(raw)
    names = [e for e, _ in events]
    assert status == 200
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert names.count("content_block_start") == 2 == names.count("content_block_stop")
    text = "".join(
        d["delta"]["text"]
        for e, d in events
        if e == "content_block_delta" and d["delta"]["type"] == "text_delta"
    )
    args = "".join(
        d["delta"]["partial_json"]
        for e, d in events
        if e == "content_block_delta" and d["delta"]["type"] == "input_json_delta"
    )
    assert text == "hi there" and json.loads(args) == {"command": "ls"}
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


def test_count_tokens_and_unknown_paths(sim_factory):
    sim = sim_factory({})
    status, body, _ = post(sim, "/v1/messages/count_tokens", msg("x" * 400))
    assert status == 200 and body["input_tokens"] >= 100
    status, body, _ = post(sim, "/v1/complete", msg())
    assert status == 404 and body["type"] == "error" and body["error"]["type"] == "not_found_error"
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(sim.base_url + "/v1/messages", timeout=5)
    assert err.value.code == 405


def test_malformed_requests_get_clean_errors(sim_factory):
    sim = sim_factory({})
    status, body, _ = post(sim, "/v1/messages", b"{not json")
    assert status == 400 and "malformed JSON" in body["error"]["message"]
    status, body, _ = post(sim, "/v1/messages", [1, 2])
    assert status == 400 and body["error"]["type"] == "invalid_request_error"
    status, body, _ = post(sim, "/v1/messages", {"model": "m"})
    assert status == 400 and "messages" in body["error"]["message"]
    assert len(sim.requests) == 0  # malformed bodies are refused before they count as turns


def test_actors_scripts_rules_and_default(sim_factory):
    sim = sim_factory(
        {
            "actors": {"judge": {"system": "你是判定者"}},
            "scripts": {"main": ["one", "two"], "judge": [{"text": "结论: 达成"}]},
            "rules": [{"actor": "main", "when": {"last_user_contains": "ping"}, "reply": "pong", "times": 1}],
            "default": {"text": "(done)"},
        }
    )

    def say(text: str, system: Any = "") -> str:
        return str(post(sim, "/v1/messages", msg(text, system=system))[1]["content"][0]["text"])

    assert say("a") == "one"
    assert say("q", system=[{"type": "text", "text": "你是判定者。"}]) == "结论: 达成"
    assert say("ping") == "pong"  # the rule wins over the script, once
    assert say("ping") == "two"
    assert say("b") == "(done)"
    assert say("c", system="你是判定者") == "(done)"
    assert sim.actors_seen() == ["main", "judge", "main", "main", "main", "judge"]
    assert sim.remaining("main") == 0


def test_http_faults_repeat_then_the_script_moves_on(sim_factory):
    sim = sim_factory({"scripts": {"main": [{"fault": 529, "times": 2}, {"fault": 429}, "finally"]}})
    codes = [post(sim, "/v1/messages", msg())[0] for _ in range(4)]
    assert codes == [529, 529, 429, 200]
    status, body, _ = post(sim, "/v1/messages", msg())
    assert status == 200 and body["content"][0]["text"] == "ok"


def test_too_long_fault_speaks_like_the_api(sim_factory):
    sim = sim_factory({"scripts": {"main": [{"fault": "too_long"}]}})
    status, body, _ = post(sim, "/v1/messages", msg())
    assert status == 400 and body["error"]["message"].startswith("prompt is too long: ")


def test_drop_cuts_the_connection_mid_stream(sim_factory):
    sim = sim_factory(
        {"scripts": {"main": [{"fault": "drop", "after_events": 2, "text": "never fully sent"}]}}
    )
    req = urllib.request.Request(
        sim.base_url + "/v1/messages", data=json.dumps(msg(stream=True)).encode(), method="POST"
    )
    # http.client raises IncompleteRead or a reset
    with pytest.raises(Exception) as err, urllib.request.urlopen(req, timeout=10) as resp:
        resp.read()
    assert "message_stop" not in str(err.value)


def test_stall_holds_the_answer(sim_factory):
    sim = sim_factory({"scripts": {"main": [{"fault": "stall", "seconds": 0.6, "text": "late"}]}})
    start = time.monotonic()
    status, body, _ = post(sim, "/v1/messages", msg())
    assert time.monotonic() - start >= 0.6
    assert status == 200 and body["content"][0]["text"] == "late"


def test_away_refuses_connections_then_comes_back(sim_factory):
    sim = sim_factory({"scripts": {"main": [{"fault": "away", "seconds": 1.0}, "back"]}})
    with pytest.raises(OSError):  # the request is dropped: a reset (or a refused connection)
        post(sim, "/v1/messages", msg())
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", sim.port), timeout=2).close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            status, body, _ = post(sim, "/v1/messages", msg())
            break
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.1)
    assert status == 200 and body["content"][0]["text"] == "back"


def test_recorded_requests_never_keep_a_credential(sim_factory):
    sim = sim_factory({})
    post(
        sim,
        "/v1/messages",
        msg(),
        headers={"x-api-key": "sk-secret-123", "authorization": "Bearer sk-secret-456"},
    )
    rec = sim.requests[0]
    assert "x-api-key" not in rec.headers and "authorization" not in rec.headers
    assert "sk-secret" not in json.dumps(rec.headers)


def test_scenario_errors_name_the_offending_part(tmp_path: Path):
    with pytest.raises(ScenarioError, match=r"scripts.main\[0\]: unknown fault 'boom'"):
        Scenario.from_data({"scripts": {"main": [{"fault": "boom"}]}})
    with pytest.raises(ScenarioError, match=r"scripts.coder: no actor"):
        Scenario.from_data({"scripts": {"coder": ["x"]}})
    with pytest.raises(ScenarioError, match="unknown keys"):
        Scenario.from_data({"scripts": {"main": [{"txt": "typo"}]}})
    with pytest.raises(ScenarioError, match="needs text"):
        Scenario.from_data({"scripts": {"main": [{"usage": {"input_tokens": 3}}]}})
    bad = tmp_path / "s.yaml"
    bad.write_text("scripts: [unclosed")
    with pytest.raises(ScenarioError, match="malformed scenario"):
        Scenario.load(bad)
    with pytest.raises(ScenarioError, match="cannot read"):
        Scenario.load(tmp_path / "missing.json")


@pytest.mark.parametrize(
    ("turn", "says"),
    [
        # each of these was taken, then failed at serve time, or raised a bare TypeError
        ({"content": "hello"}, r"'content' must be a list of blocks"),
        ({"content": ["hello"]}, r"'content' must be a list of blocks"),
        ({"text": "x", "usage": {"input_tokens": "many"}}, r"usage\.input_tokens must be a whole number"),
        ({"text": 42}, r"'text' must be a string"),
        ({"fault": [529]}, r"unknown fault \[529\]"),
        ({"text": "x", "delay": None}, r"'delay' must be a number"),
        ({"text": "x", "times": "twice"}, r"'times' must be a whole number"),
        # a misspelt figure no longer goes out unnoticed next to the real ones
        ({"text": "x", "usage": {"input_token": 5}}, r"unknown usage keys \['input_token'\]"),
    ],
)
def test_a_malformed_turn_is_refused_when_the_scenario_is_read(turn: dict[str, object], says: str) -> None:
    with pytest.raises(ScenarioError, match=r"scripts\.main\[0\]: " + says):
        Scenario.from_data({"scripts": {"main": [turn]}})


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"actors": ["judge"]}, r"actors: must be a mapping"),  # was an AttributeError
        ({"scripts": "main"}, r"scripts: must be a mapping"),
        ({"rules": [{"actor": ["main"], "reply": "x"}]}, r"rules\[0\]: 'actor' must be a string"),
        ({"rules": "x"}, r"rules: must be a list"),
        ({"context_offset": None}, r"'context_offset' must be a whole number"),
    ],
)
def test_a_malformed_part_of_a_scenario_is_a_scenario_error(data: dict[str, object], says: str) -> None:
    with pytest.raises(ScenarioError, match=says):
        Scenario.from_data(data)


def test_raw_content_blocks_stream_even_when_a_block_lacks_a_field(sim_factory):
    # a text block without its text once broke the stream halfway (a KeyError in the handler)
    blocks = [{"type": "text"}, {"type": "tool_use", "name": "Bash", "input": {}}]
    sim = sim_factory({"scripts": {"main": [{"content": blocks}]}})
    status, _, raw = post(sim, "/v1/messages", msg(stream=True))
    names = [e for e, _ in sse_events(raw)]
    assert status == 200 and names.count("content_block_stop") == 2 and names[-1] == "message_stop"


def test_a_frame_that_holds_no_json_object_does_not_stop_the_pipes_reader(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # a bare value or a batch once killed LspPipe's reader thread: every answer after it was lost
    server = (
        "import json, sys\n"
        "out = sys.stdout.buffer\n"
        "for body in (b'[1, 2]', b'7', json.dumps({'jsonrpc': '2.0', 'id': 1, 'result': 'ok'}).encode()):\n"
        "    out.write(b'Content-Length: %d\\r\\n\\r\\n' % len(body) + body)\n"
        "out.flush()\n"
        "sys.stdin.read()\n"
    )
    monkeypatch.setattr(lsp_pipe, "SERVER", [sys.executable, "-c", server])
    pipe = lsp_pipe.LspPipe(dict(os.environ), tmp_path)
    try:
        assert pipe.result("1", 10)["result"] == "ok"
        assert pipe.notifications == [] and pipe.asked == []
    finally:
        pipe.kill()


def test_yaml_and_json_scenarios_load_the_same(tmp_path: Path):
    data = {
        "actors": {"coder": {"system": "coder"}},
        "scripts": {"main": ["a", {"tool": {"name": "Bash", "input": {"command": "ls"}}}], "coder": ["c"]},
    }
    (tmp_path / "s.json").write_text(json.dumps(data))
    import yaml

    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data, allow_unicode=True))
    assert Scenario.load(tmp_path / "s.json") == Scenario.load(tmp_path / "s.yaml")


def test_the_server_binds_loopback_only_and_stops_cleanly(sim_factory):
    sim = SimServer({}).start()
    port = sim.port
    assert sim.base_url == f"http://127.0.0.1:{port}"
    sim.stop()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_the_network_guard_refuses_anything_but_loopback():
    with pytest.raises(ForbiddenNetworkAccess):
        socket.create_connection(("192.0.2.1", 80), timeout=1)  # TEST-NET-1: refused before any packet


def test_a_held_answer_waits_for_its_release_and_nothing_else(sim_factory):
    sim = sim_factory({"scripts": {"main": [{"hold": "gate", "text": "released"}, "free"]}})
    answers: list[Any] = []
    held = threading.Thread(target=lambda: answers.append(post(sim, "/v1/messages", msg())))
    held.start()
    deadline = time.monotonic() + 10
    while not sim.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    status, body, _ = post(sim, "/v1/messages", msg())  # another request is answered meanwhile
    assert status == 200 and body["content"][0]["text"] == "free"
    assert held.is_alive() and answers == []
    sim.release("gate")
    held.join(10)
    assert answers and answers[0][1]["content"][0]["text"] == "released"
