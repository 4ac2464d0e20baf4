"""flower.sim's prompt cache: usage figures computed the way the Messages API computes them."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest

from flower.sim.cache import CacheUsage, PromptCache, SimClock, prompt_tokens
from flower.sim.scenario import Scenario, ScenarioError
from flower.sim.server import SimServer
from flower.stores.tokens import block_tokens, input_cost, text_tokens

SimFactory = Callable[[Any], SimServer]
MARK = {"type": "ephemeral"}
TOOLS = [{"name": "Bash", "description": "run a command " * 200, "input_schema": {"type": "object"}}]
SYSTEM = [{"type": "text", "text": "You are a test agent. " * 150, "cache_control": MARK}]


def turn(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": text}]}


def conversation(n: int, *, first: str = "task: build it") -> list[dict[str, Any]]:
    """n messages alternating user/assistant, each a few hundred tokens."""
    out = [turn("user", first + " " + "context " * 300)]
    for i in range(1, n):
        out.append(turn("assistant" if i % 2 else "user", f"message {i} " + "words " * 250))
    return out


def body(messages: list[dict[str, Any]], *, ttl: str | None = None, mark_last: bool = True) -> dict[str, Any]:
    """A request marked the way the CLI marks it: the system prompt and the last block."""
    msgs = json.loads(json.dumps(messages))
    if mark_last and msgs:
        mark = dict(MARK, ttl=ttl) if ttl else dict(MARK)
        last = msgs[-1]["content"]
        if isinstance(last, str):
            msgs[-1]["content"] = [{"type": "text", "text": last, "cache_control": mark}]
        else:
            last[-1]["cache_control"] = mark
    return {"model": "m", "max_tokens": 10, "tools": TOOLS, "system": SYSTEM, "messages": msgs}


def head_tokens() -> int:
    return sum(block_tokens(t) for t in TOOLS) + block_tokens(SYSTEM[0])


# ---------------------------------------------------------------- the token approximation


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("", 0), ("abcd", 1), ("abcde", 2), ("中文", 2), ("中文字", 3), ("x" * 4000, 1000)],
)
def test_one_token_per_four_bytes_rounded_up(text: str, tokens: int) -> None:
    assert text_tokens(text) == tokens


def test_blocks_count_by_their_text_not_their_markup() -> None:
    plain = {"type": "text", "text": "hello world!"}
    marked = dict(plain, cache_control=MARK)
    assert block_tokens(plain) == block_tokens(marked) == block_tokens("hello world!") == 3
    result = {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "abcdefgh"}]}
    assert block_tokens(result) == block_tokens(
        {"type": "tool_result", "tool_use_id": "t", "content": "abcdefgh"}
    )
    assert block_tokens({"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "ls"}}) == 5


def test_input_cost_uses_the_cache_prices() -> None:
    assert input_cost(read=1000, write=0, uncached=0) == pytest.approx(100)
    assert input_cost(read=0, write=1000, uncached=0) == pytest.approx(1250)
    assert input_cost(read=0, write=1000, uncached=0, write_1h=1000) == pytest.approx(2000)
    assert input_cost(read=0, write=0, uncached=1000) == pytest.approx(1000)


# ---------------------------------------------------------------- accounting, step by step


def test_a_request_without_marks_is_all_uncached() -> None:
    cache = PromptCache(SimClock())
    req = body(conversation(3), mark_last=False)
    req["system"] = [{"type": "text", "text": SYSTEM[0]["text"]}]
    first = cache.serve(req)
    assert first == CacheUsage(read=0, write=0, uncached=prompt_tokens(req))
    assert cache.serve(req) == first  # nothing was written, so nothing can be read


def test_a_growing_conversation_reads_what_it_wrote_and_writes_only_the_new_part() -> None:
    cache = PromptCache(SimClock())
    msgs = conversation(5)
    first = cache.serve(body(msgs))
    assert first.read == 0 and first.uncached == 0 and first.write == prompt_tokens(body(msgs))
    longer = [*msgs, turn("assistant", "reply " * 100), turn("user", "next " * 100)]
    second = cache.serve(body(longer))
    new = block_tokens(longer[-2]["content"][0]) + block_tokens(longer[-1]["content"][0])
    assert (second.read, second.write, second.uncached) == (first.write, new, 0)
    # the same request again: everything is a read
    assert cache.serve(body(longer)) == CacheUsage(read=second.total, write=0, uncached=0)


def test_only_what_follows_the_last_mark_is_uncached() -> None:
    cache = PromptCache(SimClock())
    msgs = conversation(4)
    req = body(msgs, mark_last=False)
    req["messages"][1]["content"][0]["cache_control"] = MARK
    usage = cache.serve(req)
    after = sum(block_tokens(m["content"][0]) for m in msgs[2:])
    assert usage.read == 0 and usage.uncached == after and usage.write == usage.total - after


@pytest.mark.parametrize(
    ("edited", "reads_messages"),
    [
        (None, 12),  # nothing changed: every message is read back
        (11, 10),  # the last message: read up to the mark after message 9
        (6, 6),  # a middle message: read up to the mark after message 5
        (0, 0),  # the first message: only tools and system are read
    ],
)
def test_a_change_costs_a_rewrite_of_everything_after_it(edited: int | None, reads_messages: int) -> None:
    cache = PromptCache(SimClock())
    msgs = conversation(12)
    # a growing session marks its last block on every request: after messages 1, 3, ..., 11
    for n in range(2, 13, 2):
        cache.serve(body(msgs[:n]))
    changed = json.loads(json.dumps(msgs))
    if edited is not None:
        changed[edited]["content"][0]["text"] += " (edited)"
    usage = cache.serve(body(changed))
    expected_read = head_tokens() + sum(block_tokens(m["content"][0]) for m in msgs[:reads_messages])
    assert usage.read == expected_read
    assert usage.write == usage.total - expected_read and usage.uncached == 0


def test_the_string_and_list_forms_of_a_content_share_their_cache() -> None:
    cache = PromptCache(SimClock())
    msgs = conversation(4)
    tail = [turn("assistant", "x " * 50), turn("user", "go on")]
    cache.serve(body([*msgs, *tail]))
    as_strings = [{"role": m["role"], "content": m["content"][0]["text"]} for m in msgs]
    again = cache.serve(body([*as_strings, *tail]))
    assert again.write == 0 and again.read == again.total


def test_the_lookback_reaches_20_blocks_before_a_mark_and_no_further() -> None:
    cache = PromptCache(SimClock())
    msgs = conversation(6)
    cache.serve(body(msgs))
    near = [*msgs, *(turn("assistant" if i % 2 == 0 else "user", f"more {i} " * 30) for i in range(19))]
    assert cache.serve(body(near)).read > head_tokens()  # old mark 20 blocks back: found
    cache = PromptCache(SimClock())
    cache.serve(body(msgs))
    far = [*msgs, *(turn("assistant" if i % 2 == 0 else "user", f"more {i} " * 30) for i in range(20))]
    assert cache.serve(body(far)).read == head_tokens()  # 21 back: only the system mark hits


@pytest.mark.parametrize(
    ("ttl", "wait", "warm"),
    [(None, 299.0, True), (None, 300.0, False), ("1h", 301.0, True), ("1h", 3600.0, False)],
)
def test_entries_expire_after_their_ttl_on_the_sim_clock(ttl: str | None, wait: float, warm: bool) -> None:
    clock = SimClock()
    cache = PromptCache(clock)
    msgs = conversation(6)
    first = cache.serve(body(msgs, ttl=ttl))
    clock.advance(wait)
    again = cache.serve(body(msgs, ttl=ttl))
    assert (again.read == first.write) is warm
    if ttl == "1h":
        assert first.write_1h > 0


def test_a_read_extends_the_life_of_what_it_read() -> None:
    clock = SimClock()
    cache = PromptCache(clock)
    msgs = conversation(6)
    cache.serve(body(msgs))
    clock.advance(250)
    cache.serve(body(msgs))
    clock.advance(250)  # 500 s after the write, 250 s after the read
    assert cache.serve(body(msgs)).write == 0


def test_prefixes_below_the_minimum_are_never_cached() -> None:
    cache = PromptCache(SimClock(), min_tokens=10**6)
    msgs = conversation(4)
    cache.serve(body(msgs))
    again = cache.serve(body(msgs))
    assert again.read == 0 and again.write == 0 and again.uncached == again.total


def test_more_than_four_marks_is_refused_like_the_api() -> None:
    cache = PromptCache(SimClock())
    msgs = conversation(5)
    req = body(msgs)
    for m in req["messages"]:
        m["content"][0]["cache_control"] = MARK
    with pytest.raises(
        ValueError, match=r"A maximum of 4 blocks with cache_control may be provided\. Found 6\."
    ):
        cache.serve(req)


def test_the_clock_only_moves_forward() -> None:
    clock = SimClock(start=1000.0)
    assert 1000.0 <= clock() < 1001.0
    clock.advance(60)
    assert 1060.0 <= clock() < 1061.0
    with pytest.raises(ValueError):
        clock.advance(-1)


def test_a_clock_off_the_wall_moves_only_when_advanced() -> None:
    clock = SimClock(start=1000.0, wall=False)
    first = clock()
    threading.Event().wait(0.01)
    assert clock() == first == 1000.0
    clock.advance(299.5)
    assert clock() == 1299.5


# ---------------------------------------------------------------- through the HTTP server


def post(url: str, data: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(
        url + "/v1/messages", data=json.dumps(data).encode(), headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_the_server_reports_cache_usage_and_elapse_moves_its_clock(sim_factory: SimFactory) -> None:
    sim = sim_factory({"scripts": {"main": ["one", "two", {"text": "three", "elapse": 301}]}})
    msgs = conversation(6)
    _, first = post(sim.base_url, body(msgs))
    _, second = post(sim.base_url, body(msgs))
    _, third = post(sim.base_url, body(msgs))  # 301 s later on the sim's clock: expired
    total = prompt_tokens(body(msgs))
    assert first["usage"]["cache_creation_input_tokens"] == total and first["usage"]["input_tokens"] == 0
    assert second["usage"]["cache_read_input_tokens"] == total
    assert third["usage"]["cache_creation_input_tokens"] == total
    assert sim.requests[2].at - sim.requests[1].at >= 301
    assert [r.usage["cache_read_input_tokens"] if r.usage else None for r in sim.requests] == [0, total, 0]


def test_a_shared_clock_lets_the_caller_expire_the_cache() -> None:
    clock = SimClock()
    sim = SimServer({"default": {"text": "ok"}}, clock=clock).start()
    try:
        msgs = conversation(4)
        post(sim.base_url, body(msgs))
        clock.advance(300)
        _, reply = post(sim.base_url, body(msgs))
    finally:
        sim.stop()
    assert reply["usage"]["cache_read_input_tokens"] == 0


def test_too_many_marks_get_the_apis_400(sim_factory: SimFactory) -> None:
    sim = sim_factory({"default": {"text": "ok"}})
    req = body(conversation(5))
    for m in req["messages"]:
        m["content"][0]["cache_control"] = MARK
    status, reply = post(sim.base_url, req)
    assert status == 400 and reply["error"]["type"] == "invalid_request_error"
    assert "A maximum of 4 blocks" in reply["error"]["message"]


def test_a_mark_whose_ttl_is_no_string_gets_the_apis_400(sim_factory: SimFactory) -> None:
    # such a ttl once raised TypeError (unhashable) inside the handler: a 500 without a reason
    sim = sim_factory({"default": {"text": "ok"}})
    req = body(conversation(2))
    req["messages"][-1]["content"][-1]["cache_control"] = {"type": "ephemeral", "ttl": ["1h"]}
    status, reply = post(sim.base_url, req)
    assert status == 400 and "cache_control.ttl must be one of" in reply["error"]["message"]
    assert sim.requests[0].reply == "error:cache_control"


def test_a_scenario_that_states_usage_keeps_its_figures(sim_factory: SimFactory) -> None:
    sim = sim_factory(
        {
            "scripts": {
                "main": [
                    {"text": "a", "usage": {"input_tokens": 900, "cache_read_input_tokens": 4100}},
                    {"text": "b", "usage": {"output_tokens": 7}},
                ]
            }
        }
    )
    msgs = conversation(4)
    _, stated = post(sim.base_url, body(msgs))
    _, computed = post(sim.base_url, body(msgs))
    u = stated["usage"]
    assert (u["input_tokens"], u["cache_read_input_tokens"], u["cache_creation_input_tokens"]) == (
        900,
        4100,
        0,
    )
    # the cache still saw the first request: the second one reads it back
    assert computed["usage"]["output_tokens"] == 7
    assert computed["usage"]["cache_read_input_tokens"] == prompt_tokens(body(msgs))


def test_context_offset_is_added_to_the_uncached_input(sim_factory: SimFactory) -> None:
    sim = sim_factory({"context_offset": 5000, "default": {"text": "ok"}})
    _, reply = post(sim.base_url, body(conversation(4)))
    u = reply["usage"]
    assert u["input_tokens"] == 5000
    assert u["input_tokens"] + u["cache_creation_input_tokens"] == prompt_tokens(body(conversation(4))) + 5000


def test_elapse_must_not_go_backwards() -> None:
    with pytest.raises(ScenarioError, match="elapse"):
        Scenario.from_data({"scripts": {"main": [{"text": "x", "elapse": -5}]}})
