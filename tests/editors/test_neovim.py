"""Neovim as a second editor, for real: headless Neovim (Debian's 0.7.2, from
scripts/system-deps.sh) against the real language server, engine and Claude Code CLI, with
flower.sim's starter scenario as the model (one clarifying question; the judge rejects round 1
for a missing README.md and accepts round 2). Once with editors/neovim, once with no flower code
at all (only Neovim's own client), each run scripted in Lua beside this file; what Neovim saw
comes back as JSON."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flower.sim import scenarios
from flower.sim.env import isolated_env
from flower.sim.long_run import CHECKS, WORK_OPTIONS, WORK_QUESTION, long_run_scenario

NVIM_S = 720  # the scripts wait up to 480 s for a run, 120 s for anything else (harness.lua)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(NVIM_S + 60),
]

HERE = Path(__file__).resolve().parent
PLUGIN = HERE.parents[1] / "editors" / "neovim"
REQUEST = "写一个 hello.py"
WARNING = 2  # vim.diagnostic.severity.WARN
LEVELS = {"ERROR": 4, "WARN": 3, "INFO": 2}  # vim.log.levels


OFFER = {
    "C.UTF-8": "ws 里没有可以接着做的。开一个新的运行?",
    "en_US.UTF-8": "Nothing to continue in ws. Start a new run?",
}
ENDED = {"C.UTF-8": "^ws 里的运行:", "en_US.UTF-8": "^run in ws: "}
# the server's own process locale says Chinese: whatever English it speaks, the editor asked for
SERVER_CMD = ["env", "-u", "LC_ALL", "-u", "LC_MESSAGES", "-u", "FLOWER_LANG", "LANG=C.UTF-8"]


def nvim(
    script: str,
    workspace: Path,
    sim: Any,
    claude_root: Path,
    tmp_path: Path,
    *,
    plugin: bool,
    lang: str = "C.UTF-8",
) -> dict[str, Any]:
    """Run one Lua script in headless Neovim under the locale `lang`; what it saw, or the failure
    with Neovim's output."""
    assert shutil.which("nvim"), "Neovim is missing: the README's test command installs it (make system-deps)"
    out = tmp_path / f"{script}.json"
    home = tmp_path / "nvim-home"
    env = {
        **isolated_env(sim.base_url, claude_root),
        "FLOWER_TEST_DIR": str(HERE),
        "FLOWER_TEST_WS": str(workspace),
        "FLOWER_TEST_CMD": json.dumps([*SERVER_CMD, sys.executable, "-m", "flower_lsp"]),
        "LANG": lang,
        # the offer the stock script accepts: the server's words in the language it speaks
        "FLOWER_TEST_OFFER": OFFER[lang],
        "FLOWER_TEST_ENDED": ENDED[lang],  # a Lua pattern: the log line that says the run ended
        "FLOWER_TEST_REQUEST": REQUEST,
        "FLOWER_TEST_OUT": str(out),
        # Neovim's own state (lsp.log, shada, swap) stays in the test's folder
        **{f"XDG_{d}_HOME": str(home / d.lower()) for d in ("CONFIG", "DATA", "STATE", "CACHE")},
    }
    args = ["nvim", "--headless", "-u", "NONE", "-i", "NONE", "-n"]
    if plugin:
        args += ["--cmd", f"set runtimepath^={PLUGIN}"]
    # whatever fails in the script, even before its own error handling, ends Neovim
    boot = f"local ok, err = pcall(dofile, {json.dumps(str(HERE / script))})"
    args += ["-c", f"lua {boot} if not ok then io.stderr:write(tostring(err)) vim.cmd('cquit 2') end"]
    done = subprocess.run(args, cwd=workspace, env=env, capture_output=True, text=True, timeout=NVIM_S)
    seen: dict[str, Any] = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {}
    assert done.returncode == 0 and "error" not in seen, (
        f"nvim exited {done.returncode}: {seen.get('error')}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return seen


def nvim_pure(script: str, tmp_path: Path) -> dict[str, Any]:
    """A Lua script of the plugin's pure modules, in headless Neovim with no server."""
    out = tmp_path / f"{script}.json"
    env = {
        "PATH": "/usr/bin:/bin",
        "FLOWER_TEST_DIR": str(HERE),
        "FLOWER_TEST_WS": str(tmp_path),
        "FLOWER_TEST_CMD": "[]",
        "FLOWER_TEST_REQUEST": "",
        "FLOWER_TEST_OUT": str(out),
        **{f"XDG_{d}_HOME": str(tmp_path / d.lower()) for d in ("CONFIG", "DATA", "STATE", "CACHE")},
    }
    boot = f"local ok, err = pcall(dofile, {json.dumps(str(HERE / script))})"
    args = ["nvim", "--headless", "-u", "NONE", "-i", "NONE", "-n", "--cmd", f"set runtimepath^={PLUGIN}"]
    args += ["-c", f"lua {boot} if not ok then io.stderr:write(tostring(err)) vim.cmd('cquit 2') end"]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    seen: dict[str, Any] = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {}
    assert done.returncode == 0 and "error" not in seen, (
        f"nvim exited {done.returncode}: {seen.get('error')}\n{done.stderr}"
    )
    return seen


def rejected_then_cleared(diagnostics: list[list[dict[str, Any]]]) -> None:
    """目标.md as Neovim showed it: the README check (line 6) warned after round 1, then nothing."""
    flagged = [d for d in diagnostics if d]
    assert flagged, f"no diagnostics on 目标.md: {diagnostics}"
    assert [(d["lnum"], d["severity"], d["source"]) for d in flagged[0]] == [(5, WARNING, "flower")]
    assert "README" in flagged[0][0]["message"]
    assert diagnostics[-1] == []


def test_a_whole_run_with_the_neovim_plugin(sim_factory, workspace, claude_root, tmp_path):
    sim = sim_factory(scenarios.starter_scenario(context=78_000))
    # an English Neovim: the plugin sends its locale, so the server speaks English although its
    # own process locale (SERVER_CMD) would have it speak Chinese
    seen = nvim("plugin_run.lua", workspace, sim, claude_root, tmp_path, plugin=True, lang="en_US.UTF-8")

    # nothing to continue: the plugin asked what to do, then the clarifier's question came to vim.ui.select
    assert seen["inputs"] == ["要做什么?一句话就够。 "]  # the plugin's own prompt, not the server's
    [select] = seen["selects"]
    assert select["prompt"] == f"Flower asks: {scenarios.QUESTION}"
    assert select["items"] == [*scenarios.OPTIONS, "Answer in my own words…", "Skip (the agent decides)"]
    # while the person chose, the editor answered other requests and the question still waited
    assert select["pending"] == ["q1"]
    assert (workspace / "hello.py").read_text(encoding="utf-8") == 'print("hello")\n'

    # the run's log, its end, the meter and the verdicts
    log = seen["log"]
    assert log[0] == "[run] run started in ws" and log[-1].startswith("[run] finished (achieved)")
    assert any(line.startswith("[verdict] verdict #1: not_yet") for line in log)
    # the statusline's meter moved as the context grew (" ?" while a question waited)
    meters = {m.removesuffix(" ?") for m in seen["meters"]}
    assert len(meters) >= 2 and all(re.fullmatch(r"Flower \d+(\.\d)?K / 1M", m) for m in meters), meters
    rejected_then_cleared(seen["diagnostics"])

    notes = [(n["msg"], n["level"]) for n in seen["notifications"]]
    assert ("Flower: Started in ws.", LEVELS["INFO"]) in notes
    assert any(m.startswith("Flower: == 确认需求 ==") for m, _ in notes)  # steps, as notifications
    assert any(m.startswith("Flower: verdict #1: not_yet") and lvl == LEVELS["WARN"] for m, lvl in notes)
    assert ("Flower: Nothing is running in ws.", LEVELS["WARN"]) in notes  # a refusal, shown once
    assert notes.count(("Flower: Nothing is running in ws.", LEVELS["WARN"])) == 1
    assert seen["state"] == {"running": False, "waking": True, "verdict": "achieved"}
    assert seen["state_buffer"][0] == f"Flower state: {workspace}"
    # back in the folder: the resume banner
    banner = seen["banner"]
    assert banner["level"] == LEVELS["INFO"] and banner["msg"].startswith(
        f"Flower: <- continuing in {workspace} where it stopped  brief confirmed · goal 3 checks"
    )


def test_a_whole_run_with_no_flower_code_in_neovim(sim_factory, workspace, claude_root, tmp_path):
    sim = sim_factory(scenarios.starter_scenario(context=78_000))
    # Neovim under the C locale: no language to pass on, the server speaks the seeds' Chinese
    seen = nvim("stock_run.lua", workspace, sim, claude_root, tmp_path, plugin=False)

    # continue: nothing there, so the server offered a run; the request came in words, the
    # clarifier's question as a message request with its options
    assert seen["continued"]["offer"] == "start"
    offer, what, question = seen["requests"]
    assert offer["message"] == OFFER["C.UTF-8"]
    assert what["message"].startswith("Flower 提问(start-") and "flower.answer" in what["message"]
    assert [a["title"] for a in what["actions"]] == ["跳过(让它自己判断)"]
    assert seen["answered"].startswith("回答了 start-")
    assert question["message"].startswith(f"Flower 提问(q1,ws):{scenarios.QUESTION}")
    assert [a["title"] for a in question["actions"]] == [*scenarios.OPTIONS, "跳过(让它自己判断)"]
    assert seen["ended"].startswith("ws 里的运行:跑完了(achieved) · $")
    assert (workspace / "hello.py").read_text(encoding="utf-8") == 'print("hello")\n'

    # the log reads as the terminal; the meter in the log and on the progress bar
    logs = "\n".join(m["message"] for m in seen["logs"])
    assert "== 确认需求 " in logs and "判定第 1 轮:未达成" in logs and "判定第 2 轮:达成" in logs
    assert "\n上下文 " in logs
    reports = [p["value"].get("message", "") for p in seen["progress"] if p["value"].get("kind") == "report"]
    assert any(" · 上下文 " in r for r in reports), reports
    rejected_then_cleared(seen["diagnostics"])

    # flower/state without params; no showDocument to a client without it: the path instead
    assert seen["state"] == {"running": False, "waking": True}
    goal = (workspace / ".flower" / "notes" / "目标.md").resolve()
    assert seen["opened"]["ok"] is False and str(goal) in seen["opened"]["message"]
    # the banner of the next start, as a message
    assert seen["banner"]["type"] == 3 and " 接上上次  需求已确认 · 目标 3 条" in seen["banner"]["message"]


def test_the_history_buffer_follows_a_run_and_opens_checks_and_handoffs(
    sim_factory, workspace, claude_root, tmp_path
):
    # rounds 1 and 2 rejected (a question in round 2), round 3 handed over at 158K and accepted
    sim = sim_factory(long_run_scenario(rounds=3, threshold=150_000, start=110_000, growth=12_000))
    seen = nvim("history_run.lua", workspace, sim, claude_root, tmp_path, plugin=True, lang="en_US.UTF-8")
    assert seen["log"][-1].startswith("[run] finished (achieved)"), seen["log"][-3:]

    # opened before the run, then kept current by flower/historyUpdate alone: one read in all
    first, *during = seen["snapshots"]
    assert seen["buffer"] == "flower://history"
    assert "No run in this folder: :FlowerNew starts one." in first
    assert seen["final_reads"] == 1 and seen["updates"] > 10
    assert any(any(line.lstrip().startswith("▶ 干活") for line in s) for s in during), "the live step, marked"

    final = seen["final"]
    assert final == seen["fresh"], "what the updates built is what a fresh read renders"
    assert final[0] == f"Flower history: {workspace}"
    [wake] = [line for line in final if line.startswith("Wake ")]
    assert re.fullmatch(
        r"Wake 1 · \$\d+\.\d+ · \S+( \S+)? · \d+ turns · started \d{4}-\d\d-\d\d \d\d:\d\d:\d\d", wake
    )
    steps = [line.strip() for line in final if line.startswith("  ") and not line.startswith("   ")]
    assert [s.split(" · ")[0] for s in steps] == ["确认需求", "设定目标", "干活"]
    assert steps[2].split(" · ")[1] == "3 judged"
    rounds = [line.strip().split(" · ")[:2] for line in final if line.strip().startswith("Round ")]
    assert rounds == [["Round 1", "not yet"], ["Round 2", "not yet"], ["Round 3", "achieved"]]

    goal = workspace / ".flower" / "notes" / "目标.md"
    text = goal.read_text(encoding="utf-8").splitlines()
    failed = [line.strip() for line in final if line.strip().startswith("✗ ")]
    assert failed == [f"✗ {c}  (目标.md:{text.index(f'- {c}') + 1})" for c in (CHECKS[1], CHECKS[2])]
    assert any(
        line.strip() == f"? {scenarios.QUESTION} · → {scenarios.OPTIONS[0]}"
        or line.strip().startswith(f"? {scenarios.QUESTION} · → {scenarios.OPTIONS[0]} · waited ")
        for line in final
    ), final
    assert any(line.strip().startswith(f"? {WORK_QUESTION} · → {WORK_OPTIONS[0]}") for line in final), final
    [handoff] = [line.strip() for line in final if line.strip().startswith("Handoff → ")]
    assert re.fullmatch(r"Handoff → generation 2 · at 1\d\d(\.\d)?K · 交接-干活#round3\.md", handoff), handoff
    assert re.fullmatch(r"Total: \$\d+\.\d+ · .+ · \d+ turns · 1 wake", final[2]), final[2]
    assert re.fullmatch(r"Context: \S+ of 200K · \d+ turns · 1 handoff · handoff at 150K", final[3]), final[3]

    # <CR>: the failed check opens 目标.md at its line, the handoff its document
    check = seen["check"]
    assert check["name"] == str(goal.resolve()) or check["name"] == str(goal)
    assert check["cursor"] == text.index(f"- {CHECKS[1]}") + 1
    # the accepting verdict's evidence: each check backed by the read of hello.py; <CR> opens it
    backed = [line.strip() for line in final if line.strip().startswith("✓ ")]
    assert backed and all(re.fullmatch(r"✓ .+  \(read hello\.py(:\d+(-\d+)?)?\)", b) for b in backed), backed
    assert {b[2:].rsplit("  (", 1)[0] for b in backed} == set(CHECKS)
    assert Path(seen["evidence"]["name"]).resolve() == (workspace / "hello.py").resolve()
    assert Path(seen["handoff"]["name"]).name == "交接-干活#round3.md"
    assert Path(seen["handoff"]["name"]).is_file()


def test_history_updates_apply_as_the_protocol_says_and_the_buffer_reads_on_every_edge(tmp_path):
    seen = nvim_pure("history_apply.lua", tmp_path)
    assert seen["cases"] == {
        "a turn with nothing held": {"applied": "missed"},
        "the next turn": {"applied": "appended", "revision": 4, "turns": 1},
        "a turn after a gap": {"applied": "missed", "revision": 3, "turns": 0},
        "an old turn": {"applied": "stale", "revision": 3, "turns": 0},
        "a newer whole history": {"applied": "replaced", "revision": 7, "turns": 0},
        "an older whole history": {"applied": "stale", "revision": 8, "turns": 0},
    }
    assert seen["untouched"] == 0
    assert seen["reading"] == ["Flower history: reading…"]
    assert seen["empty"][2:] == [
        "! manifest.json: damaged",
        "",
        "No run in this folder: :FlowerNew starts one.",
    ]
    live = [line.strip() for line in seen["live"]]
    assert live[2] == "Total: $0.004 · 1h 3m · 0 turns · 1 wake · running 干活"
    assert live[3] == "Context: no turns yet · 0 turns · handoff at 950K"
    assert live[4] == "Earlier work archived with a new run: 2 wakes, left out"
    assert live[6] == "Wake 1 · running · $0.004 · 1h 3m · 0 turns"  # no start time on record: none shown
    assert live[7:] == [
        "▶ 干活 · running · $0.004 · 1h 3m",
        "? (empty question) · waiting for an answer",
        "? 用哪个? · skipped: 不知道 · waited 1m 15s",
        "Handoff → generation 2 · at 158K · degraded · its document is no longer on disk",
        "↻ 2 retries",
        "! overloaded",
        "! timeout",
    ]


def test_flower_rewind_asks_with_the_files_then_puts_round_1_back(
    sim_factory, workspace, claude_root, tmp_path
):
    sim = sim_factory(scenarios.starter_scenario())
    seen = nvim("rewind_run.lua", workspace, sim, claude_root, tmp_path, plugin=True, lang="en_US.UTF-8")
    assert any(line.startswith("[run] finished") for line in seen["log"]), seen["log"][-3:]

    [confirm] = seen["confirmations"]
    assert confirm["items"] == ["Rewind", "Cancel"]
    lines = confirm["prompt"].split("\n")
    assert lines[0].startswith("back to after round 1's verdict: ")
    assert "  - README.md" in lines and "  = mine.txt (yours, kept)" in lines
    assert not (workspace / "README.md").exists()  # made in round 2: gone
    assert (workspace / "hello.py").is_file() and (workspace / "mine.txt").read_text() == "mine\n"
    said = [n["msg"] for n in seen["notifications"]]
    [done] = [m for m in said if m.startswith("Flower: rewound to after round 1's verdict")]
    assert "is back at the end of round 1" in done
    assert (
        said[-1].startswith("Flower: usage: :FlowerRewind N")
        and seen["notifications"][-1]["level"] == LEVELS["WARN"]
    )


def test_a_wake_that_stopped_short_says_which_stop_and_what_continuing_does(tmp_path):
    lines = [line.strip() for line in nvim_pure("history_stopped.lua", tmp_path)["lines"]]
    budget = next(i for i, line in enumerate(lines) if line.startswith("Wake 1"))
    stalled = next(i for i, line in enumerate(lines) if line.startswith("Wake 2"))
    assert lines[stalled].startswith("Wake 2 · stopped: no progress · ")
    assert lines[stalled + 1] == "stopped: no progress —— run flower to go on, change the goal, or stop"
    assert lines[budget].startswith("Wake 1 · stopped: budget · ")
    assert lines[budget + 1] == "stopped: budget —— to go on, run flower again with a new budget"
