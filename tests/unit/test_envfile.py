"""A workspace .env gives the CLI credentials and model settings, and nothing else."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from flower.base import secrets
from flower.core import envfile
from flower.core.envfile import WORKSPACE_ENV_KEYS, load_workspace_env

# whatever a test sets in os.environ through the loader is removed again
TOUCHED = (*WORKSPACE_ENV_KEYS, "BASH_ENV", "PYTHONSTARTUP", "NODE_OPTIONS", "LD_PRELOAD", "HOME_COPY")


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in TOUCHED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(envfile, "_said", set())
    monkeypatch.setattr(secrets, "_remembered", set())
    yield
    for name in TOUCHED:  # the loader writes os.environ itself, behind monkeypatch's back
        os.environ.pop(name, None)


def dotenv(ws: Path, text: str) -> Path:
    ws.mkdir(exist_ok=True)
    (ws / ".env").write_text(text, encoding="utf-8")
    return ws


def test_credentials_and_model_settings_reach_the_environment(tmp_path, caplog):
    ws = dotenv(
        tmp_path / "ws",
        "ANTHROPIC_AUTH_TOKEN=tok-12345678\nANTHROPIC_BASE_URL=http://127.0.0.1:9\nANTHROPIC_MODEL=claude-x\n",
    )
    with caplog.at_level(logging.WARNING, logger="flower"):
        got = load_workspace_env(ws)
    assert got is not None and got.applied == [
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_MODEL",
    ]
    assert (
        os.environ["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9"
        and os.environ["ANTHROPIC_MODEL"] == "claude-x"
    )
    assert got.notice() is None and caplog.records == []


def test_anything_else_is_ignored_and_said_once_in_one_line(tmp_path, caplog):
    ws = dotenv(
        tmp_path / "ws",
        "ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijkl\nBASH_ENV=./evil.sh\nPYTHONSTARTUP=./evil.py\n"
        "NODE_OPTIONS=--require ./evil.js\nLD_PRELOAD=./evil.so\n",
    )
    with caplog.at_level(logging.WARNING, logger="flower"):
        first = load_workspace_env(ws)
        again = load_workspace_env(ws)  # the CLI's check and the Runtime both load it
    assert first is not None and again is not None
    assert first.ignored == ["BASH_ENV", "PYTHONSTARTUP", "NODE_OPTIONS", "LD_PRELOAD"]
    for name in first.ignored:
        assert name not in os.environ
    assert os.environ["ANTHROPIC_API_KEY"] == "sk-ant-api03-abcdefghijkl"
    [record] = caplog.records
    line = record.getMessage()
    assert "\n" not in line and str((ws / ".env").resolve()) in line
    assert (
        "忽略了 BASH_ENV, PYTHONSTARTUP, NODE_OPTIONS, LD_PRELOAD(工作区的 .env 只提供凭据和模型设置)" in line
    )


def test_the_environment_wins_and_the_files_credential_is_still_masked(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-from-the-shell-000")
    ws = dotenv(tmp_path / "ws", "ANTHROPIC_API_KEY=planted-key-value-99\n")
    got = load_workspace_env(ws)
    assert (
        got is not None and got.applied == [] and os.environ["ANTHROPIC_API_KEY"] == "sk-from-the-shell-000"
    )
    assert secrets.redact("cat .env: planted-key-value-99") == f"cat .env: {secrets.MASK}"


def test_the_files_other_secrets_are_masked_though_they_never_reach_the_environment(tmp_path):
    ws = dotenv(tmp_path / "ws", "GITHUB_TOKEN=gh-value-from-file\nGREETING=hello-everyone\n")
    load_workspace_env(ws)
    assert "GITHUB_TOKEN" not in os.environ
    text = "the worker said gh-value-from-file and hello-everyone"
    assert secrets.redact(text) == f"the worker said {secrets.MASK} and hello-everyone"


def test_an_endpoint_comes_only_with_its_own_credential(tmp_path, monkeypatch, caplog):
    # a repository's .env must not send the person's own key to another address
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-from-the-shell-000")
    ws = dotenv(
        tmp_path / "ws", "ANTHROPIC_BASE_URL=http://attacker.invalid\nANTHROPIC_CUSTOM_HEADERS=x: y\n"
    )
    with caplog.at_level(logging.WARNING, logger="flower"):
        got = load_workspace_env(ws)
    assert got is not None and got.held == ["ANTHROPIC_BASE_URL", "ANTHROPIC_CUSTOM_HEADERS"]
    assert "ANTHROPIC_BASE_URL" not in os.environ and "ANTHROPIC_CUSTOM_HEADERS" not in os.environ
    assert (
        "没有采用 ANTHROPIC_BASE_URL, ANTHROPIC_CUSTOM_HEADERS(正在用的凭据来自环境变量"
        in caplog.records[0].getMessage()
    )


def test_values_are_taken_as_written_without_interpolation(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME_COPY", "/home/someone")
    ws = dotenv(tmp_path / "ws", "ANTHROPIC_AUTH_TOKEN=tok-${HOME_COPY}-x\n")
    load_workspace_env(ws)
    assert os.environ["ANTHROPIC_AUTH_TOKEN"] == "tok-${HOME_COPY}-x"


def test_a_gateways_header_values_from_the_file_are_masked(tmp_path):
    ws = dotenv(
        tmp_path / "ws",
        "ANTHROPIC_AUTH_TOKEN=tok-12345678\nANTHROPIC_CUSTOM_HEADERS=x-key: hdr-secret-4242\n",
    )
    load_workspace_env(ws)
    assert secrets.redact("hdr-secret-4242") == secrets.MASK


def test_no_file_anywhere_is_no_change(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ws").mkdir()
    assert load_workspace_env(tmp_path / "ws") is None


def test_without_its_own_file_the_nearest_one_above_the_current_directory_is_read_the_same_way(
    tmp_path, monkeypatch
):
    dotenv(tmp_path, "ANTHROPIC_MODEL=claude-near\nBASH_ENV=./evil.sh\n")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    (tmp_path / "ws").mkdir()
    got = load_workspace_env(tmp_path / "ws")
    assert got is not None and got.path == (tmp_path / ".env").resolve()
    assert os.environ["ANTHROPIC_MODEL"] == "claude-near" and "BASH_ENV" not in os.environ


def test_reading_a_workspaces_file_changes_no_environment_and_gives_each_workspace_only_its_own(
    tmp_path, monkeypatch
):
    import random

    from flower.core.envfile import read_workspace_env

    rng = random.Random(28)
    others = ("BASH_ENV", "PYTHONSTARTUP", "NODE_OPTIONS", "LD_PRELOAD")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-from-the-environment")
    before = dict(os.environ)
    for case in range(300):
        workspaces = []
        for i in range(rng.randint(2, 4)):
            keys = rng.sample((*WORKSPACE_ENV_KEYS, *others), rng.randint(1, 6))
            values = {k: f"{k.lower()}-{case}-{i}" for k in keys}
            ws = dotenv(tmp_path / f"ws-{case}-{i}", "".join(f"{k}={v}\n" for k, v in values.items()))
            workspaces.append((ws, values))
        for ws, values in rng.sample(workspaces, len(workspaces)):
            got = read_workspace_env(ws)
            assert got is not None
            # only its own file's credentials and model settings, and none the environment has
            # (an endpoint stays with the environment's credential)
            expected = {
                k: v
                for k, v in values.items()
                if k in WORKSPACE_ENV_KEYS and k not in before and k not in envfile.ENDPOINT_KEYS
            }
            assert got.values == expected and got.applied == list(expected)
        assert dict(os.environ) == before


def test_two_runtimes_in_one_process_each_keep_their_workspaces_model(tmp_path, monkeypatch):
    from flower.core.runtime import Runtime

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.delenv("FLOWER_STORE", raising=False)
    first = Runtime(workspace=dotenv(tmp_path / "a", "ANTHROPIC_MODEL=model-a\n"), run_dir=tmp_path / "ra")
    second = Runtime(workspace=dotenv(tmp_path / "b", "ANTHROPIC_MODEL=model-b\n"), run_dir=tmp_path / "rb")
    try:
        assert first.env == {"ANTHROPIC_MODEL": "model-a"} and second.env == {"ANTHROPIC_MODEL": "model-b"}
        assert "ANTHROPIC_MODEL" not in os.environ
    finally:
        first.close()
        second.close()


def test_a_credential_only_in_the_workspaces_file_is_enough_for_its_runtime(tmp_path, monkeypatch):
    from flower.core.runtime import Runtime

    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "FLOWER_STORE"):
        monkeypatch.delenv(name, raising=False)
    ws = dotenv(tmp_path / "ws", "ANTHROPIC_API_KEY=sk-ant-api03-only-in-the-file\n")
    runtime = Runtime(workspace=ws, run_dir=tmp_path / "runs")
    try:
        assert runtime.env == {"ANTHROPIC_API_KEY": "sk-ant-api03-only-in-the-file"}
        assert "ANTHROPIC_API_KEY" not in os.environ
    finally:
        runtime.close()
