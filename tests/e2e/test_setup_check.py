"""`flower setup --check` against flower.sim answering each class: the line a person reads."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

KEY = "sk-ant-setup-check-secret-0123456789"


def setup_check(tmp_path: Path, **env_vars: str) -> subprocess.CompletedProcess[str]:
    """`flower setup --check` in a fresh workspace, with HOME and the config folders in tmp."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        CLAUDE_CONFIG_DIR=str(home / ".claude"),
        NO_PROXY="127.0.0.1,localhost",
        **env_vars,
    )
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return run_setup("--check", ws=ws, env=env)


def run_setup(*argv: str, ws: Path, env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flower", "setup", *argv, "-w", str(ws)],
        cwd=ws,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def check(tmp_path: Path, base_url: str, **extra: str) -> subprocess.CompletedProcess[str]:
    done = setup_check(tmp_path, ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=base_url, **extra)
    assert KEY not in done.stdout + done.stderr  # masked, always
    assert f"ANTHROPIC_API_KEY = sk-a***(共 {len(KEY)} 位)(来自 环境变量)" in done.stdout
    return done


def test_a_working_credential_is_said_and_the_probe_is_one_small_request(sim_factory, tmp_path):
    sim = sim_factory({"scripts": {"main": [{"text": "pong"}]}})
    done = check(tmp_path, sim.base_url, ANTHROPIC_MODEL="claude-gateway-model")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"+ 凭证能用:{sim.base_url}/v1/messages 用模型 claude-gateway-model 答了" in done.stdout
    [request] = sim.requests
    assert request.path == "/v1/messages" and request.body["max_tokens"] == 16
    assert request.body["model"] == "claude-gateway-model"


@pytest.mark.parametrize(
    ("turn", "says"),
    [
        (
            {"fault": 401},
            "x 401 key 不对:{url} 不认这个凭证。重跑 flower setup 输入正确的 key(网关要它签发的 token)",
        ),
        (
            {"fault": 403},
            "x 403 没有权限:Your API key does not have permission to use the specified resource.。"
            "这个 key 有效,但它的账户或网关不许它用这个接口,去那边开权限",
        ),
        (
            {"fault": 404, "message": "model: claude-haiku-4-5"},
            "x 模型不存在:{url} 没有 claude-haiku-4-5(model: claude-haiku-4-5)。"
            "把 ANTHROPIC_MODEL 设成网关提供的模型名",
        ),
        (
            {"fault": 429},
            "! 429 被限流:key 被接受了,但现在用不了(Number of request tokens has exceeded your "
            "per-minute rate limit)。等限额恢复再跑,或者查账户的用量上限",
        ),
        (
            {"fault": 500},
            "! 500 服务端出错:Internal server error。不是你的配置的问题,过一会儿再跑 flower setup --check",
        ),
        ({"fault": 529}, "! 529 服务端出错:Overloaded。不是你的配置的问题,过一会儿再跑 flower setup --check"),
    ],
    ids=["401", "403", "404-model", "429", "500", "529"],
)
def test_each_refusal_is_one_line_that_says_what_to_do(sim_factory, tmp_path, turn, says):
    sim = sim_factory({"scripts": {"main": [turn]}})
    done = check(tmp_path, sim.base_url)
    assert done.returncode == 1
    assert says.format(url=f"{sim.base_url}/v1/messages") in done.stderr.splitlines()
    assert len(sim.requests) == 1  # one probe, no retries


def test_a_base_url_that_is_not_the_api_is_a_wrong_address(sim_factory, tmp_path):
    sim = sim_factory({"scripts": {"main": [{"text": "never asked"}]}})
    done = check(tmp_path, f"{sim.base_url}/v1")  # the classic mistake: the /v1 typed in
    url = f"{sim.base_url}/v1/v1/messages"
    assert done.returncode == 1
    assert (
        f"x 404 地址不对:{url} 不是 Messages API。ANTHROPIC_BASE_URL 填网关的根地址(不带 /v1)"
        in done.stderr.splitlines()
    )
    assert sim.requests == []  # the sim saw no Messages request


def test_a_port_nobody_listens_on_is_unreachable(tmp_path):
    with socket.socket() as sock:  # a free port, closed again: connecting there is refused
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    done = check(tmp_path, f"http://127.0.0.1:{port}")
    assert done.returncode == 1
    [line] = [x for x in done.stderr.splitlines() if x.startswith("x 连不上")]
    assert line.startswith(f"x 连不上 http://127.0.0.1:{port}/v1/messages:")
    assert line.endswith("。检查网关地址、网络和代理")


def test_an_endpoint_that_never_answers_is_unreachable_after_the_timeout(sim_factory):
    import asyncio

    from flower.core import probe

    sim = sim_factory({"scripts": {"main": [{"fault": "stall", "seconds": 60}]}})
    env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": sim.base_url}
    got = asyncio.run(probe.probe(env, timeout=0.5))
    assert got.kind == probe.UNREACHABLE and got.status is None
    assert got.detail == "0.5 秒内没有回答"


def test_the_users_own_file_is_named_as_the_credentials_source(sim_factory, tmp_path):
    sim = sim_factory({"scripts": {"main": [{"text": "pong"}]}})
    user = tmp_path / "home" / ".config" / "flower" / ".env"
    user.parent.mkdir(parents=True)
    user.write_text(f"ANTHROPIC_API_KEY={KEY}\nANTHROPIC_BASE_URL={sim.base_url}\n", encoding="utf-8")
    done = setup_check(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"ANTHROPIC_API_KEY = sk-a***(共 {len(KEY)} 位)(来自 {user.resolve()})" in done.stdout
    assert KEY not in done.stdout + done.stderr and len(sim.requests) == 1


def test_setup_user_keeps_the_key_in_the_users_file_that_every_workspace_reads(sim_factory, tmp_path):
    sim = sim_factory({"scripts": {"main": [{"text": "pong"}, {"text": "pong"}]}})
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "cfg"), CLAUDE_CONFIG_DIR=str(home / ".claude"))
    ws, other = tmp_path / "ws", tmp_path / "other"
    ws.mkdir()
    other.mkdir()
    done = run_setup("--user", ws=ws, env=env, stdin=f"{KEY}\n{sim.base_url}\n")
    assert done.returncode == 0, done.stdout + done.stderr
    user = home / "cfg" / "flower" / ".env"
    assert f"+ 存好了:{user}" in done.stdout and not (ws / ".env").exists()
    assert stat.S_IMODE(user.stat().st_mode) == 0o600
    assert f"ANTHROPIC_API_KEY={KEY}" in user.read_text(encoding="utf-8")
    assert KEY not in done.stdout + done.stderr
    # another workspace with nothing of its own finds the same key there
    found = run_setup("--check", ws=other, env=env)
    assert found.returncode == 0, found.stdout + found.stderr
    assert f"(来自 {user.resolve()})" in found.stdout and "+ 凭证能用" in found.stdout
