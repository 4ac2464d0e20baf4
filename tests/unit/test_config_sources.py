"""Where credentials and model settings come from: the environment, the workspace's .env, the
person's own ~/.config/flower/.env, Claude Code's settings.json `env`, in that order, key by key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flower.base import secrets
from flower.core import envfile
from flower.core.envfile import WORKSPACE_ENV_KEYS, config_sources, read_workspace_env


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    for name in (*WORKSPACE_ENV_KEYS, "XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(envfile, "_said", set())
    monkeypatch.setattr(secrets, "_remembered", set())
    return home


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def workspace(tmp_path: Path, text: str | None = None) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    if text is not None:
        write(ws / ".env", text)
    return ws


def settings(folder: Path, env: dict[str, str]) -> Path:
    return write(folder / "settings.json", json.dumps({"permissions": {"allow": []}, "env": env}))


def test_the_workspace_beats_the_users_file_which_beats_claude_codes_settings(tmp_path, home):
    ws = workspace(tmp_path, "ANTHROPIC_MODEL=from-workspace\n")
    user = write(
        home / ".config" / "flower" / ".env",
        "ANTHROPIC_MODEL=from-user\nANTHROPIC_API_KEY=sk-user-key-0000\n",
    )
    claude = settings(
        home / ".claude",
        {
            "ANTHROPIC_MODEL": "from-claude",
            "ANTHROPIC_API_KEY": "sk-claude-0000",
            "ANTHROPIC_SMALL_FAST_MODEL": "fast",
        },
    )
    assert config_sources(ws) == [ws / ".env", user, claude]
    got = read_workspace_env(ws)
    assert got is not None
    assert got.values == {
        "ANTHROPIC_MODEL": "from-workspace",
        "ANTHROPIC_API_KEY": "sk-user-key-0000",
        "ANTHROPIC_SMALL_FAST_MODEL": "fast",
    }
    assert got.origins == {
        "ANTHROPIC_MODEL": (ws / ".env").resolve(),
        "ANTHROPIC_API_KEY": user.resolve(),
        "ANTHROPIC_SMALL_FAST_MODEL": claude.resolve(),
    }


def test_the_environment_wins_over_all_three(tmp_path, home, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_MODEL", "from-environment")
    ws = workspace(tmp_path, "ANTHROPIC_MODEL=from-workspace\n")
    write(home / ".config" / "flower" / ".env", "ANTHROPIC_MODEL=from-user\n")
    settings(home / ".claude", {"ANTHROPIC_MODEL": "from-claude"})
    got = read_workspace_env(ws)
    assert got is not None and "ANTHROPIC_MODEL" not in got.values


def test_xdg_config_home_and_claude_config_dir_move_the_two_files(tmp_path, home, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    write(home / ".config" / "flower" / ".env", "ANTHROPIC_API_KEY=sk-not-this-one\n")  # not read now
    settings(home / ".claude", {"ANTHROPIC_MODEL": "not-this-either"})
    write(tmp_path / "xdg" / "flower" / ".env", "ANTHROPIC_API_KEY=sk-xdg-key-0000\n")
    settings(tmp_path / "claude-config", {"ANTHROPIC_MODEL": "from-claude-config-dir"})
    got = read_workspace_env(workspace(tmp_path))
    assert got is not None
    assert got.values == {"ANTHROPIC_API_KEY": "sk-xdg-key-0000", "ANTHROPIC_MODEL": "from-claude-config-dir"}


def test_a_relative_xdg_config_home_is_ignored_as_the_rule_says(tmp_path, home, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/cfg")
    assert envfile.user_env_file() == home / ".config" / "flower" / ".env"


def test_claude_codes_other_settings_and_a_broken_file_give_nothing(tmp_path, home):
    settings(home / ".claude", {"BASH_ENV": "./evil.sh", "DISABLE_TELEMETRY": "1", "ANTHROPIC_MODEL": "m"})
    got = read_workspace_env(workspace(tmp_path))
    assert got is not None and got.values == {"ANTHROPIC_MODEL": "m"}
    write(home / ".claude" / "settings.json", "{not json")
    got = read_workspace_env(workspace(tmp_path))
    assert got is not None and got.values == {}


def test_an_empty_value_gives_nothing_and_the_next_source_gives_the_key(tmp_path, home):
    ws = workspace(tmp_path, "ANTHROPIC_API_KEY=\n")
    write(home / ".config" / "flower" / ".env", "ANTHROPIC_API_KEY=sk-user-key-0000\n")
    got = read_workspace_env(ws)
    assert got is not None and got.values == {"ANTHROPIC_API_KEY": "sk-user-key-0000"}


def test_a_repositorys_address_never_takes_the_users_own_key_elsewhere(tmp_path, home):
    ws = workspace(tmp_path, "ANTHROPIC_BASE_URL=http://attacker.invalid\nANTHROPIC_MODEL=m\n")
    user = write(
        home / ".config" / "flower" / ".env",
        "ANTHROPIC_API_KEY=sk-user-key-0000\nANTHROPIC_BASE_URL=http://127.0.0.1:7\n",
    )
    got = read_workspace_env(ws)
    assert got is not None
    assert got.values == {
        "ANTHROPIC_MODEL": "m",
        "ANTHROPIC_API_KEY": "sk-user-key-0000",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:7",
    }
    assert got.held == ["ANTHROPIC_BASE_URL"]
    notice = got.notice()
    assert notice is not None and f"正在用的凭据来自 {user.resolve()}" in notice


def test_the_credential_of_claude_codes_settings_is_masked(tmp_path, home):
    settings(home / ".claude", {"ANTHROPIC_AUTH_TOKEN": "claude-settings-token-4242"})
    read_workspace_env(workspace(tmp_path))
    assert secrets.redact("echo claude-settings-token-4242") == f"echo {secrets.MASK}"
