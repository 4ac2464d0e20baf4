"""AgentSpec -> ClaudeAgentOptions, and the two context policies."""

from __future__ import annotations

import pytest
from claude_agent_sdk import InMemorySessionStore

from flower import AgentSpec, CompactPolicy, HandoffPolicy, build_options, default_window
from flower.plugin import plugin_dir


def test_build_options_maps_every_field_the_reference_states(tmp_path):
    spec = AgentSpec(
        name="a",
        instructions="be brief",
        allowed_tools=["Read"],
        disallowed_tools=["WebSearch"],
        model="m",
        effort="high",
        max_turns=3,
        max_budget_usd=1.5,
        permission_mode="acceptEdits",
        mcp_servers={"x": {"type": "stdio", "command": "true"}},
        env={"FOO": "1"},
        compact=CompactPolicy(mode="no_summary", window=150_000),
    )
    store = InMemorySessionStore()
    opts = build_options(spec, cwd=tmp_path, session_store=store, add_dirs=["/elsewhere"], prelude="INDEX")
    assert opts.system_prompt == {"type": "preset", "preset": "claude_code", "append": "be brief\n\nINDEX"}
    assert (
        opts.allowed_tools == ["Read"]
        and opts.disallowed_tools == ["WebSearch"]
        and opts.permission_mode == "acceptEdits"
    )
    assert opts.setting_sources == [] and opts.plugins == [{"type": "local", "path": str(plugin_dir())}]
    assert opts.cwd == str(tmp_path) and opts.add_dirs == ["/elsewhere"]
    assert opts.session_store is store and opts.session_store_flush == "eager"
    assert (opts.model, opts.effort, opts.max_turns, opts.max_budget_usd) == ("m", "high", 3, 1.5)
    assert opts.mcp_servers == spec.mcp_servers
    assert opts.env == {"FOO": "1", "DISABLE_AUTO_COMPACT": "1", "CLAUDE_CODE_AUTO_COMPACT_WINDOW": "150000"}
    assert spec.env == {"FOO": "1"}  # the spec itself is not modified


def test_empty_fields_are_left_to_the_sdk_defaults():
    opts = build_options(AgentSpec(name="a", instructions="x"), use_plugin=False, portable=False)
    assert opts.plugins == [] and opts.setting_sources == ["project"]
    assert opts.cwd is None and opts.session_store is None and opts.model is None and opts.hooks is None
    assert opts.system_prompt == {"type": "preset", "preset": "claude_code", "append": "x"}


def test_fork_and_resume_at_only_count_with_resume():
    spec = AgentSpec(name="a", instructions="x")
    silent = build_options(spec, fork=True, resume_at="u1")
    assert silent.resume is None and silent.fork_session is False and silent.resume_session_at is None
    real = build_options(spec, resume="s1", fork=True, resume_at="u1")
    assert (real.resume, real.fork_session, real.resume_session_at) == ("s1", True, "u1")


def test_compact_policy_modes():
    assert CompactPolicy().env() == {}
    assert CompactPolicy(mode="off").env() == {"DISABLE_COMPACT": "1"}
    with pytest.raises(ValueError, match="'sometimes'"):
        CompactPolicy(mode="sometimes").env()
    bad = AgentSpec(name="a", instructions="x", compact=CompactPolicy(mode="sometimes"))
    with pytest.raises(ValueError):
        build_options(bad)  # surfaces when options are built, i.e. inside Runtime.run


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("", 1_000_000),
        ("claude-opus-5[1m]", 1_000_000),
        ("claude-sonnet-5-1m", 1_000_000),
        ("claude-haiku-5", 200_000),
        ("claude-sonnet-5", 1_000_000),
        ("claude-x-11m", 1_000_000),
        ("HAIKU-3", 200_000),
    ],
)
def test_default_window_follows_the_model_name(monkeypatch, model, window):
    monkeypatch.delenv("ANTHROPIC_DEFAULT_OPUS_MODEL", raising=False)
    monkeypatch.setenv("ANTHROPIC_MODEL", model)
    assert default_window() == window
    assert HandoffPolicy().window == window


def test_default_window_falls_back_to_the_opus_variable(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_MODEL", raising=False)
    monkeypatch.setenv("ANTHROPIC_DEFAULT_OPUS_MODEL", "claude-haiku-5")
    assert default_window() == 200_000
