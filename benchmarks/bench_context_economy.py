"""What the stores save on what the CLI really sends, with the prompt cache in the price.

One long scripted session at HT001 scale runs through flower's Runtime, the bundled Claude
Code CLI and flower.sim, once per store configuration, with the same script and the same
timing:

    sqlite   plain SqliteSessionStore (the baseline)
    trim     TrimmingSessionStore: glance expiry + spilling big results
    prune    PruningSessionStore with trimming off (Runtime's default)
    all      PruningSessionStore with trimming on (the `flower go` default)

70 rounds; after every round a judge takes a while and the session is resumed with its
verdict; a network outage (round 23) and a human interrupt (round 47) resume it on the way.
flower.sim computes usage the way the API does (prefix cache at the CLI's cache_control
marks, 5-minute life on a shared clock), so every figure comes from the same run. For each
resume the first request the CLI sends is captured and priced:

    cost = uncached + 0.1 x cache read + 1.25 x cache write   (input-token equivalents)

in dollars at claude-opus-5-5's list input price as CLI 2.1.327 prices it ($4 / MTok).
Tokens are flower's stated approximation (4 bytes of UTF-8 a token, per block).

Time is simulated (no sleeping): each model turn takes 8-30 s, a delegated worker 1-7 min,
a test run 20-90 s, the judge 1.5-8 min (so some resumes find the cache expired and some do
not), the outage 3 min, the person typing 30 s. Pass --judge 60,240 to keep every judged
resume inside the cache's life.

    .venv/bin/python benchmarks/bench_context_economy.py [--rounds 70] [--seed 7] [--judge 90,480] [--smoke]

Figures only: it checks the targets and says whether they hold; it asserts nothing on time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from claude_agent_sdk import HookContext, HookInput, HookJSONOutput, HookMatcher
from claude_agent_sdk.types import SessionKey

from _cli import add_smoke
from bench_store_load import prose
from flower import AgentSpec, EphemeralPolicy, PrunePolicy, Resilience, Runtime, TrimPolicy
from flower.sim.cache import SimClock
from flower.sim.env import isolated_env, scrub_host_model_vars
from flower.sim.server import Recorded, SimServer
from flower.stores.prune import PruningSessionStore
from flower.stores.sqlite import SqliteSessionStore
from flower.stores.tokens import input_cost
from flower.stores.transcript import is_block, result_text
from flower.stores.trim import TrimmingSessionStore

PYTHON = sys.executable  # not a shim: its output must not depend on the machine's state
PRICE_PER_MTOK = 4.0  # claude-opus-5-5 input, list price in CLI 2.1.327's table
INTERRUPT_FLAG = ".build-started"  # the long tool touches it: the moment to interrupt
SPILL_MARK = "[工具结果已裁剪"
CONFIGS = ("sqlite", "trim", "prune", "all")
HAN = "上下文恢复裁剪落盘协调者执行者判定目标交接工作台脚本结果缓存前缀命令状态验证通过失败修复"


def han(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(HAN) for _ in range(n))


# -- the workspace the session works in -----------------------------------------------------


def make_workspace(ws: Path, rounds: int, seed: int) -> None:
    rng = random.Random(seed)
    (ws / "src").mkdir(parents=True)
    (ws / "reports").mkdir()
    (ws / "scripts").mkdir()
    for k in range(24):
        lines = [
            f"def step_{k}_{i}(x):\n    return {prose(rng, rng.randint(30, 70))!r}"
            for i in range(rng.randint(12, 50))
        ]
        (ws / "src" / f"module_{k}.py").write_text("\n".join(lines) + "\n")
    for r in range(rounds):
        size = rng.randint(1200, 3600)
        body = "\n".join(f"- {han(rng, 18)} {prose(rng, 60)}" for _ in range(size // 90))
        (ws / "reports" / f"round-{r:02d}.md").write_text(
            f"结论:第 {r} 轮完成。\n依据:\n{body}\n产物:src/\n未验证:无\n"
        )
    (ws / "scripts" / "check.py").write_text(
        "import random, sys\n"
        "r = random.Random(int(sys.argv[1]))\n"
        "n = r.randint(6, 70)\n"
        "for i in range(n):\n"
        "    print(f'tests/test_{i:03d}.py::case_{r.randint(1, 99)} PASSED  [{100 * (i + 1) // n:3d}%]')\n"
        "print(f'{n} passed in {r.uniform(0.5, 9):.2f}s')\n"
    )
    (ws / "scripts" / "worker.py").write_text(
        "import sys\nprint(open(f'reports/round-{int(sys.argv[1]):02d}.md', encoding='utf-8').read())\n"
    )
    (ws / ".gitignore").write_text(".flower/\n")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@x",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@x",
    }
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    subprocess.run(["git", "-C", str(ws), "add", "."], check=True, env=env)
    subprocess.run(["git", "-C", str(ws), "commit", "-qm", "start"], check=True, env=env)


def fresh_workspace(ws: Path, rounds: int, seed: int) -> None:
    if ws.exists():
        shutil.rmtree(ws)
    make_workspace(ws, rounds, seed)


def spill_holds(text: str, original: str) -> bool:
    """Whether the file a pointer names holds the original bytes."""
    path = Path(next(t for t in text.replace(",", " ").split() if t.endswith(".txt")))
    return path.is_file() and path.read_text(encoding="utf-8") == original


# -- the script: what the model says, and how long each step takes ---------------------------


def bash(command: str, elapse: float, text: str | None = None) -> dict[str, Any]:
    turn: dict[str, Any] = {
        "tool": {"name": "Bash", "input": {"command": command, "description": command[:40]}}
    }
    if text:
        turn["text"] = text
    turn["elapse"] = round(elapse, 1)
    return turn


def read(path: str, elapse: float) -> dict[str, Any]:
    return {"tool": {"name": "Read", "input": {"file_path": path}}, "elapse": round(elapse, 1)}


@dataclass
class Plan:
    turns: list[dict[str, Any]] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)  # one per round
    judge: list[float] = field(default_factory=list)  # seconds before round r's resume
    resumes: list[tuple[int, int, str]] = field(default_factory=list)  # (turn index, round, kind)
    fault_round: int = -1
    interrupt_round: int = -1


def make_plan(rounds: int, seed: int, judge: tuple[float, float], ws: Path) -> Plan:
    rng = random.Random(seed)
    plan = Plan()
    plan.fault_round = min(23, rounds - 1)
    plan.interrupt_round = min(47, rounds - 1)
    denials = set(rng.sample(range(1, rounds), min(8, rounds - 1)))

    def think() -> float:
        return rng.uniform(8, 30)

    for r in range(rounds):
        if r == 0:
            plan.prompts.append("目标:" + han(rng, 300) + "\n" + prose(rng, 2400))
            plan.judge.append(0.0)
        else:
            plan.prompts.append(f"第 {r} 轮判定:未达成。还差:" + han(rng, rng.randint(60, 160)) + "。继续。")
            plan.judge.append(rng.uniform(*judge))
            plan.resumes.append((len(plan.turns), r, "judged"))
        turns: list[dict[str, Any]] = []
        wait = think()
        glances = ["git status --short", "git log --oneline -5", "ls src", "git diff --stat", "pwd && ls"]
        turns.append(bash(rng.choice(glances), wait, text="先看一下现状。"))
        turns.append(bash(f"{PYTHON} scripts/worker.py {r}", think()))
        worker = rng.uniform(60, 420)  # the delegated worker ran this long
        for _ in range(rng.randint(1, 2)):
            turns.append(read(str(ws / "src" / f"module_{rng.randrange(24)}.py"), worker + think()))
            worker = 0.0
        turns.append(bash(f"{PYTHON} scripts/check.py {r * 7 + seed}", think()))
        tests = rng.uniform(20, 90)
        turns.append(bash(rng.choice(glances), tests + think()))
        if r in denials:
            turns.append(bash(f"rm -rf build/{prose(rng, 30).replace(' ', '_')}", think()))
        if r == plan.interrupt_round:
            turns.append(bash(f"touch {INTERRUPT_FLAG} && sleep 30", think(), text="跑一下完整构建。"))
            resumed = read(str(ws / "src" / f"module_{rng.randrange(24)}.py"), 30 + think())
            turns.append({**resumed, "text": "好,先按你说的调整:" + han(rng, 80)})
            plan.resumes.append((len(plan.turns) + len(turns) - 1, r, "interrupt"))
        if r == plan.fault_round:
            turns.append({"fault": "away", "seconds": 1.0, "elapse": think()})
            resumed = read(str(ws / "src" / f"module_{rng.randrange(24)}.py"), 180 + think())
            turns.append({**resumed, "text": "网络回来了,接着做。"})
            plan.resumes.append((len(plan.turns) + len(turns) - 1, r, "outage"))
        turns.append({"text": f"这一轮做完了:{han(rng, rng.randint(120, 360))}", "elapse": think()})
        plan.turns += turns
    return plan


# -- one configuration ------------------------------------------------------------------------


def make_store(
    kind: str, db: Path, ws: Path, clock: Callable[[], float]
) -> SqliteSessionStore | TrimmingSessionStore | PruningSessionStore:
    if kind == "sqlite":
        return SqliteSessionStore(db)
    if kind == "trim":
        return TrimmingSessionStore(db, ws, TrimPolicy(), EphemeralPolicy(), clock=clock)
    trim = TrimPolicy(enabled=kind == "all")
    return PruningSessionStore(
        db, ws, policy=trim, prune=PrunePolicy(), ephemeral=EphemeralPolicy(), clock=clock
    )


async def no_rm(data: HookInput, tool_use_id: str | None, ctx: HookContext) -> HookJSONOutput:
    tool_input = data.get("tool_input")
    command = tool_input.get("command", "") if isinstance(tool_input, dict) else ""
    if str(command).startswith("rm "):
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "不要在这里删东西,交给执行者。",
            }
        }
    return {}


@dataclass
class Outcome:
    kind: str
    requests: list[Recorded]
    seconds: float
    lost: int
    spilled: int
    expired: int


async def run_config(kind: str, plan: Plan, root: Path, ws: Path, rounds: int, seed: int) -> Outcome:
    """Run the plan once; the workspace is rebuilt at the same path the script names."""
    base = root / kind
    fresh_workspace(ws, rounds, seed)
    clock = SimClock(start=1_900_000_000.0, wall=False)  # time is the script's, not the machine's
    sim = SimServer({"scripts": {"main": plan.turns}, "default": {"text": "(script used up)"}}, clock=clock)
    sim.start()
    saved_env = dict(os.environ)
    os.environ.update(isolated_env(sim.base_url, base / "claude", max_retries=0))
    # The Bash tool runs a login shell: an empty home keeps the host's profile (and whatever
    # it prints or waits for) out of every result.
    (base / "home").mkdir(parents=True, exist_ok=True)
    os.environ["HOME"] = str(base / "home")
    spec = AgentSpec(
        name="coordinator",
        instructions="benchmark coordinator",
        allowed_tools=["Bash", "Read"],
        hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[no_rm])]},
    )
    rt = Runtime(
        workspace=ws,
        run_dir=base / "runs",
        resilience=Resilience(base_delay=0.05, probe_interval=0.2, probe_timeout=1.0),
        handoff=False,
    )
    rt.store.close()
    rt.store = make_store(kind, base / "runs" / "sessions.db", ws, clock)

    def interrupter() -> None:
        while not (ws / INTERRUPT_FLAG).exists():  # the CLI is running the long tool now
            time.sleep(0.05)
        rt.interrupt("先停一下,构建不用全跑,只跑改过的模块。")

    watcher = threading.Thread(target=interrupter, daemon=True)
    watcher.start()
    started = time.perf_counter()
    session: str | None = None
    try:
        for r in range(rounds):
            clock.advance(plan.judge[r])
            result = await rt.run(spec, plan.prompts[r], step_name="干活", resume=session)
            if not result.ok:
                raise RuntimeError(f"{kind}: round {r} failed: {result.error}")
            session = result.session_id
        seconds = time.perf_counter() - started
        lost, spilled, expired = await verify(rt, session, base / "runs" / "sessions.db", ws)
    finally:
        rt.close()
        sim.stop()
        os.environ.clear()
        os.environ.update(saved_env)
    main = sim.requests_for("main")
    with (base / "requests.jsonl").open("w", encoding="utf-8") as log:
        for rec in main:
            row = {"reply": rec.reply, "messages": len(rec.messages), "usage": rec.usage}
            log.write(json.dumps({**row, "last_user": rec.last_user_text[-120:]}, ensure_ascii=False) + "\n")
    if len(main) != len(plan.turns):
        raise RuntimeError(f"{kind}: {len(main)} requests for {len(plan.turns)} scripted turns")
    return Outcome(kind, main, seconds, lost, spilled, expired)


async def verify(rt: Runtime, session: str | None, db: Path, ws: Path) -> tuple[int, int, int]:
    """Bytes the model can no longer get back, over every result the resumed copy changed."""
    key: SessionKey = {"project_key": rt.project_key, "session_id": session or ""}
    raw_store = SqliteSessionStore(db)
    try:
        raw = cast("list[dict[str, Any]] | None", await raw_store.load(key))
    finally:
        raw_store.close()
    shown = cast("list[dict[str, Any]] | None", await rt.store.load(key))
    originals = results_by_id(raw or [])
    lost = spilled = expired = 0
    for tool_id, block in results_by_id(shown or []).items():
        before = originals.get(tool_id)
        if before is None or block.get("content") == before.get("content"):
            continue
        text, original = result_text(block), result_text(before)
        if text.startswith(SPILL_MARK):
            ok = spill_holds(text, original)
            spilled += 1
        else:
            # expired or neutralised: the block keeps its tool_use_id, the store keeps the text
            ok = original == result_text(originals[tool_id])
            expired += 1
        if not ok:
            lost += len(original.encode())
    return lost, spilled, expired


def results_by_id(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for entry in entries:
        content = entry.get("message", {}).get("content") if entry.get("type") == "user" else None
        for block in content if isinstance(content, list) else []:
            ref = block.get("tool_use_id") if is_block(block, "tool_result") else None
            if isinstance(ref, str):
                out[ref] = block
    return out


# -- the report -------------------------------------------------------------------------------


@dataclass
class Figures:
    sent: int = 0
    read: int = 0
    write: int = 0
    uncached: int = 0

    @classmethod
    def of(cls, rec: Recorded) -> Figures:
        u = rec.usage
        read, write, unc = (
            (u["cache_read_input_tokens"], u["cache_creation_input_tokens"], u["input_tokens"])
            if u is not None
            else (0, 0, 0)
        )
        return cls(read + write + unc, read, write, unc)

    def __iadd__(self, other: Figures) -> Figures:
        self.sent += other.sent
        self.read += other.read
        self.write += other.write
        self.uncached += other.uncached
        return self

    @property
    def cost(self) -> float:
        return input_cost(read=self.read, write=self.write, uncached=self.uncached) * PRICE_PER_MTOK / 1e6


def k(n: int) -> str:
    return f"{n / 1000:.1f}K"


def report(plan: Plan, outcomes: dict[str, Outcome], args: argparse.Namespace, wall: float) -> int:
    base = outcomes["sqlite"]
    others = [c for c in outcomes if c != "sqlite"]
    print(f"claude-opus-5-5 input at ${PRICE_PER_MTOK}/MTok, cache read 0.1x, cache write 1.25x")
    print(
        f"{args.rounds} rounds, {len(plan.turns)} requests per configuration, judge {args.judge} s, "
        f"seed {args.seed}; wall time {wall:.0f} s "
        f"({', '.join(f'{o.kind} {o.seconds:.0f} s' for o in outcomes.values())})"
    )
    print()
    head = f"{'resume':>14} {'cache':>5}"
    for c in ("sqlite", *others):
        head += f" | {c + ': sent':>12} {'read':>7} {'write':>7} {'unc':>3} {'cost $':>7}"
        head += f" {'x':>5}" if c != "sqlite" else ""
    print(head)
    print("-" * len(head))
    worst = {c: 0.0 for c in others}
    totals_resume = {c: Figures() for c in outcomes}
    for index, r, kind in plan.resumes:
        plain = Figures.of(base.requests[index])
        state = "cold" if plain.read < plain.write else "warm"
        line = f"{f'{r:>2} {kind}':>14} {state:>5}"
        for c in ("sqlite", *others):
            f = Figures.of(outcomes[c].requests[index])
            totals_resume[c] += f
            line += f" | {k(f.sent):>12} {k(f.read):>7} {k(f.write):>7} {f.uncached:>3} {f.cost:>7.4f}"
            if c != "sqlite":
                ratio = f.cost / plain.cost
                worst[c] = max(worst[c], ratio)
                line += f" {ratio:>5.2f}"
        print(line)
    print()
    print(
        f"{'over the run':>20} | {'sent':>9} {'read':>9} {'write':>8} {'uncached':>8} {'cost $':>8} "
        f"{'x plain':>7} {'largest':>8} {'x':>5}"
    )
    run_totals: dict[str, Figures] = {}
    largest: dict[str, int] = {}
    for c in outcomes:
        tot = Figures()
        for rec in outcomes[c].requests:
            tot += Figures.of(rec)
        run_totals[c] = tot
        largest[c] = max(Figures.of(rec).sent for rec in outcomes[c].requests)
    for c in outcomes:
        t = run_totals[c]
        print(
            f"{c + ' (all requests)':>20} | {k(t.sent):>9} {k(t.read):>9} {k(t.write):>8} {t.uncached:>8} "
            f"{t.cost:>8.3f} {t.cost / run_totals['sqlite'].cost:>7.3f} {k(largest[c]):>8} "
            f"{largest[c] / largest['sqlite']:>5.3f}"
        )
    for c in outcomes:
        t = totals_resume[c]
        print(
            f"{c + ' (resumes only)':>20} | {k(t.sent):>9} {k(t.read):>9} {k(t.write):>8} {t.uncached:>8} "
            f"{t.cost:>8.3f} {t.cost / totals_resume['sqlite'].cost:>7.3f}"
        )
    print()
    for c in others:
        o = outcomes[c]
        print(f"{c}: {o.spilled} results spilled, {o.expired} expired or neutralised, {o.lost} bytes lost")
    print()
    allc = "all" if "all" in outcomes else others[-1] if others else "sqlite"
    worst.setdefault(allc, 1.0)
    checks = [
        ("input cost over the run <= 0.85x plain", run_totals[allc].cost / run_totals["sqlite"].cost <= 0.85),
        ("largest request <= 0.75x plain", largest[allc] / largest["sqlite"] <= 0.75),
        ("no resume above 1.05x its plain counterpart", worst[allc] <= 1.05),
        ("0 bytes lost", all(outcomes[c].lost == 0 for c in others)),
    ]
    for name, ok in checks:
        print(f"  [{'ok' if ok else 'MISSED'}] {name}")
    print(f"  worst resume ratio: {', '.join(f'{c} {worst[c]:.2f}x' for c in others)}")
    return 0


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=70)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--judge", default="90,480", help="judge time range in seconds, lo,hi")
    parser.add_argument(
        "--only", default=",".join(CONFIGS), help="configurations to run (sqlite is always run)"
    )
    parser.add_argument("--keep", help="keep the runs under this folder")
    add_smoke(parser)
    args = parser.parse_args()
    if args.smoke:
        args.rounds = 1  # its resumes all in round 0: the outage and the interrupt
    lo, hi = (float(x) for x in args.judge.split(","))
    scrub_host_model_vars()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="flower-economy-"))
    root.mkdir(parents=True, exist_ok=True)
    ws = root / "ws"
    plan = make_plan(args.rounds, args.seed, (lo, hi), ws)
    wanted = ["sqlite", *[c for c in args.only.split(",") if c in CONFIGS and c != "sqlite"]]
    started = time.perf_counter()
    outcomes: dict[str, Outcome] = {}
    try:
        for kind in wanted:
            outcomes[kind] = await run_config(kind, plan, root, ws, args.rounds, args.seed)
            print(f"ran {kind} in {outcomes[kind].seconds:.0f} s", file=sys.stderr)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return report(plan, outcomes, args, time.perf_counter() - started)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
