"""What does resume-time trimming + pruning cost in load time, and what does it take out?

Generates a main-thread transcript at HT001 scale (70 rounds, ~190K tokens of message
content, several thousand entries, tens of MB stored), writes it into a temporary
sessions.db, then times ``PruningSessionStore.load()`` (expire + trim + prune, the first load
after the cache expired, then the recorded decisions) against a plain
``SqliteSessionStore.load()`` of the same rows, run alternately so both see the same machine
state. It prints the medians, their ratio, and how much of what the CLI would send the
layers take out, and checks that every trimmed byte can be read back from the spill files.

What the CLI would send is counted on the live chain only: the entries reached from the
leaf through ``parentUuid`` (history before a compaction is stored, never sent again),
without the API-error entries CLI 2.1.327 leaves out of its request by itself. With
``--compactions N`` the transcript holds N compactions, as long real sessions do.

The same rows are also written into a PostgresSessionStore on a throwaway PostgreSQL server
(``flower.sim.postgres``: a temp data directory, a Unix socket), and both loads are timed there
too, side by side with SQLite; the two backends must hand back the same entries, layered or
not. ``--no-postgres`` leaves that part out.

The money figure with the prompt cache in it comes from bench_context_economy.py, which
runs the real CLI; this one is about load time and the content of one resume.

    .venv/bin/python benchmarks/bench_store_load.py [--rounds 70] [--runs 7] [--seed 1] [--compactions 0]
        [--no-postgres] [--smoke]

Figures only: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import statistics
import sys
import tempfile
import time
import uuid as uuidlib
from pathlib import Path
from typing import Any, cast

from claude_agent_sdk.types import SessionKey, SessionStore, SessionStoreEntry

from _cli import add_smoke
from flower.sim.postgres import LocalPostgres
from flower.stores.ephemeral import EphemeralPolicy, is_ephemeral
from flower.stores.postgres import PostgresSessionStore
from flower.stores.prune import PrunePolicy, PruningSessionStore
from flower.stores.sqlite import SqliteSessionStore
from flower.stores.tokens import entry_tokens
from flower.stores.transcript import is_api_error_the_cli_drops, live_chain
from flower.stores.trim import TrimPolicy

KEY: SessionKey = {"project_key": "-work-ht001", "session_id": "9b1f3c52-0000-4000-8000-000000000001"}
SPILL_MARK = "[工具结果已裁剪"

WORDS = [
    "session",
    "store",
    "context",
    "resume",
    "trim",
    "prune",
    "spill",
    "token",
    "worker",
    "coordinator",
    "judge",
    "brief",
    "goal",
    "verdict",
    "handoff",
    "lineage",
    "workbench",
    "artifact",
    "script",
    "note",
    "index",
    "hook",
    "guard",
    "denial",
]


def prose(rng: random.Random, n: int) -> str:
    out: list[str] = []
    size = 0
    while size < n:
        w = rng.choice(WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:n]


def code_lines(rng: random.Random, n: int, path: str) -> str:
    lines, size, i = [], 0, 1
    while size < n:
        word = rng.choice(["def", "return", "if", "for", "self.", "await"])
        line = f"{i:>6}\t    {word} {prose(rng, rng.randint(20, 70))}"
        lines.append(line)
        size += len(line) + 1
        i += 1
    return f"{path}\n" + "\n".join(lines)


class Generator:
    """A coordinator-style main thread: per round, a prompt, a burst of tool calls, a report.

    Entry shapes follow the CLI's JSONL (one content block per assistant entry, bookkeeping
    lines such as api-request / api-request-blob / prompt_snapshot attachments in between).
    """

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.entries: list[dict[str, Any]] = []
        self.last: str | None = None
        self.clock = 1_790_000_000.0
        self.ids = 0
        self.snapshot_tools = [
            {"name": f"Tool{i}", "description": prose(self.rng, 1400), "input_schema": {"type": "object"}}
            for i in range(16)
        ]

    def meta(self) -> dict[str, Any]:
        self.clock += self.rng.uniform(0.2, 9.0)
        return {
            "isSidechain": False,
            "userType": "external",
            "entrypoint": "sdk-py",
            "cwd": "/home/dev/ht001",
            "sessionId": KEY["session_id"],
            "version": "2.1.327",
            "gitBranch": "main",
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(self.clock)),
        }

    def link(self, entry: dict[str, Any]) -> dict[str, Any]:
        entry = {
            "parentUuid": self.last,
            **entry,
            "uuid": str(uuidlib.UUID(int=self.rng.getrandbits(128))),
            **self.meta(),
        }
        self.entries.append(entry)
        self.last = entry["uuid"]
        return entry

    def side(self, entry: dict[str, Any]) -> None:
        self.entries.append({**entry, "sessionId": KEY["session_id"]})

    def usage(self) -> dict[str, Any]:
        return {
            "input_tokens": self.rng.randint(2, 60),
            "cache_creation_input_tokens": self.rng.randint(100, 4000),
            "cache_read_input_tokens": self.rng.randint(20_000, 190_000),
            "output_tokens": self.rng.randint(30, 900),
            "service_tier": "standard",
            "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
            "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
        }

    def assistant(
        self, block: dict[str, Any], msg_id: str, model: str = "claude-opus-5-5", **extra: Any
    ) -> None:
        self.link(
            {
                "type": "assistant",
                "message": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [block],
                    "stop_reason": "tool_use" if block["type"] == "tool_use" else "end_turn",
                    "stop_sequence": None,
                    "usage": self.usage(),
                },
                "requestId": msg_id,
                **extra,
            }
        )

    def api_request(self, blob: Any) -> None:
        digest = f"{self.rng.getrandbits(256):064x}"
        self.side({"type": "api-request-blob", "hash": digest, "message": {"role": "user", "content": blob}})
        self.side(
            {
                "type": "api-request",
                "id": str(uuidlib.UUID(int=self.rng.getrandbits(128))),
                "params": {
                    "model": "claude-opus-5-5",
                    "betas": [
                        "claude-code-20250219",
                        "interleaved-thinking-2025-05-14",
                        "context-management-2025-06-27",
                        "advanced-tool-use-2025-11-20",
                        "effort-2025-11-24",
                    ],
                    "max_tokens": 128000,
                    "thinking": {"type": "adaptive", "display": "updates"},
                    "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
                    "output_config": {"effort": "medium"},
                },
                "cacheControl": [{"path": ["system", 0], "value": {"type": "ephemeral"}}],
                "tail": [digest],
                "requestDigest": f"{self.rng.getrandbits(256):064x}",
            }
        )

    def prompt(self, text: str) -> None:
        self.side({"type": "queue-operation", "operation": "enqueue", "content": text})
        self.link({"type": "user", "message": {"role": "user", "content": text}, "promptSource": "sdk"})
        self.link(
            {
                "type": "attachment",
                "attachment": {"type": "prompt_snapshot", "systemPrompt": [""], "tools": self.snapshot_tools},
            }
        )

    def tool_output(self) -> tuple[str, dict[str, Any], str, Any]:
        """(tool name, input, result text, toolUseResult) for one call."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.25:
            cmd = rng.choice(
                [
                    "git status -s",
                    "git status",
                    "ls -la src",
                    "git log --oneline -8",
                    "pwd",
                    "git diff --stat",
                ]
            )
            out = "\n".join(f" M src/{prose(rng, 18).replace(' ', '_')}.py" for _ in range(rng.randint(1, 6)))
            return (
                "Bash",
                {"command": cmd, "description": "glance"},
                out,
                {"stdout": out, "stderr": "", "interrupted": False},
            )
        if roll < 0.48:
            cmd = rng.choice(["pytest -q tests/unit", "make build", "python scripts/audit.py", "npm test"])
            size = rng.randint(2500, 7000) if rng.random() < 0.03 else rng.randint(60, 400)
            out = prose(rng, size)
            return (
                "Bash",
                {"command": cmd, "description": "run"},
                out,
                {"stdout": out, "stderr": "", "interrupted": False},
            )
        if roll < 0.78:
            path = f"/home/dev/ht001/src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py"
            size = rng.randint(2500, 7000) if rng.random() < 0.03 else rng.randint(120, 500)
            out = code_lines(rng, size, path)
            result = {
                "type": "text",
                "file": {"filePath": path, "content": out, "numLines": out.count("\n") + 1},
            }
            return "Read", {"file_path": path}, out, result
        out = "\n".join(
            f"src/{rng.choice(WORDS)}.py:{rng.randint(1, 900)}: {prose(rng, 50)}"
            for _ in range(rng.randint(1, 5))
        )
        return (
            "Grep",
            {"pattern": rng.choice(WORDS), "output_mode": "content"},
            out,
            {"mode": "content", "content": out},
        )

    def call(self, msg_id: str) -> None:
        self.ids += 1
        tool_id = f"toolu_{self.ids:08d}"
        name, inp, out, rich = self.tool_output()
        self.assistant({"type": "tool_use", "id": tool_id, "name": name, "input": inp}, msg_id)
        block = {"type": "tool_result", "tool_use_id": tool_id, "content": out}
        self.link({"type": "user", "message": {"role": "user", "content": [block]}, "toolUseResult": rich})
        self.api_request([block])

    def denial(self, msg_id: str) -> None:
        self.ids += 1
        tool_id = f"toolu_{self.ids:08d}"
        cmd = "cd /home/dev/ht001 && " + prose(self.rng, 160).replace(" ", "_")
        self.assistant({"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": cmd}}, msg_id)
        text = "PreToolUse:Bash hook error: [delegate_guard]: 协调者不直接动手,用 Agent 派一个执行者去做。"
        block = {"type": "tool_result", "tool_use_id": tool_id, "content": text, "is_error": True}
        self.link(
            {
                "type": "user",
                "message": {"role": "user", "content": [block]},
                "toolUseResult": f"Error: {text}",
                "toolDenialKind": "permission-rule",
            }
        )
        self.api_request([block])

    def outage(self) -> None:
        for _ in range(self.rng.randint(2, 4)):
            self.link(
                {
                    "type": "assistant",
                    "isApiErrorMessage": True,
                    "message": {
                        "role": "assistant",
                        "model": "<synthetic>",
                        "content": [
                            {"type": "text", "text": "API Error: Can't reach the API server (ENOTFOUND)."}
                        ],
                    },
                }
            )

    def compact(self) -> None:
        """A compaction: a boundary with no parent, then the summary the CLI resumes from."""
        boundary = {
            "type": "system",
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
            "logicalParentUuid": self.last,
            "compactMetadata": {"trigger": "auto", "preTokens": 160_000},
        }
        self.last = None
        self.link(boundary)
        self.link(
            {
                "type": "user",
                "isCompactSummary": True,
                "message": {
                    "role": "user",
                    "content": "Summary of the work so far: " + prose(self.rng, 6000),
                },
            }
        )

    def build(self, rounds: int, calls: int, compactions: int = 0) -> list[dict[str, Any]]:
        rng = self.rng
        outages = set(rng.sample(range(5, rounds), 3))
        denials = set(rng.sample(range(rounds), 8))
        compact_at = {rounds * (k + 1) // (compactions + 1) for k in range(compactions)}
        for r in range(rounds):
            if r in compact_at:
                self.compact()
            self.prompt("目标:把 HT001 跑通。" if r == 0 else "继续")
            for _ in range(calls + rng.randint(-5, 5)):
                msg_id = f"msg_{rng.getrandbits(64):016x}"
                if rng.random() < 0.2:
                    self.assistant(
                        {
                            "type": "thinking",
                            "thinking": prose(rng, rng.randint(100, 400)),
                            "signature": "sig",
                        },
                        msg_id,
                    )
                if rng.random() < 0.2:
                    self.assistant({"type": "text", "text": prose(rng, rng.randint(60, 300))}, msg_id)
                self.call(msg_id)
            if r in denials:
                self.denial(f"msg_{rng.getrandbits(64):016x}")
            self.assistant(
                {"type": "text", "text": prose(rng, rng.randint(300, 900))}, f"msg_{rng.getrandbits(64):016x}"
            )
            self.side({"type": "last-prompt", "lastPrompt": "继续", "leafUuid": self.last})
            if r in outages:
                self.outage()
                self.side({"type": "last-prompt", "lastPrompt": "继续", "leafUuid": self.last})
                self.prompt(
                    "上一轮在中途被打断,没有跑完。检查一下工作台里已经落盘的东西,从中断处接着做,不要重头来过。"
                )
        return self.entries


def sent(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The message entries the CLI would put in its request after a resume."""
    return [
        entries[i]
        for i in live_chain(entries)
        if entries[i].get("type") in ("user", "assistant") and not is_api_error_the_cli_drops(entries[i])
    ]


def sent_tokens(entries: list[dict[str, Any]]) -> int:
    return sum(entry_tokens(e) for e in sent(entries))


def visible_chars(entries: list[dict[str, Any]]) -> int:
    """Characters of message content the model is sent on resume."""
    total = 0
    for entry in sent(entries):
        content = entry["message"]["content"]
        if isinstance(content, str):
            total += len(content)
            continue
        for block in content:
            kind = block.get("type")
            if kind == "text":
                total += len(block["text"])
            elif kind == "thinking":
                total += len(block["thinking"])
            elif kind == "tool_use":
                total += len(json.dumps(block["input"], ensure_ascii=False))
            elif kind == "tool_result":
                c = block["content"]
                total += len(c) if isinstance(c, str) else sum(len(p.get("text", "")) for p in c)
    return total


def results(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        b["tool_use_id"]: b
        for e in entries
        if e.get("type") == "user" and isinstance(e["message"]["content"], list)
        for b in e["message"]["content"]
        if b.get("type") == "tool_result"
    }


def verify(
    original: list[dict[str, Any]], loaded: list[dict[str, Any]], prune: PrunePolicy, workspace: Path
) -> dict[str, int]:
    """Check every changed result is accounted for; return counts per kind of change."""
    commands = {
        b["id"]: b["input"].get("command", "")
        for e in original
        if e.get("type") == "assistant"
        for b in e["message"]["content"]
        if b.get("type") == "tool_use"
    }
    before, after = results(original), results(loaded)
    counts = {"unchanged": 0, "spilled": 0, "expired": 0, "neutralised": 0, "removed": 0, "healed": 0}
    for tool_id, block in before.items():
        now = after.get(tool_id)
        if now is None:
            counts["removed"] += 1
            continue
        if now["content"] == block["content"]:
            counts["unchanged"] += 1
            continue
        text = now["content"]
        assert isinstance(text, str), tool_id
        if text.startswith(SPILL_MARK):
            path = Path(
                next(t for t in text.replace(",", " ").split() if t.startswith("/") and t.endswith(".txt"))
            )
            assert path.read_text(encoding="utf-8") == block["content"], f"spill file for {tool_id} differs"
            counts["spilled"] += 1
        elif "已过期" in text:
            assert is_ephemeral(commands[tool_id], workspace=workspace), tool_id
            counts["expired"] += 1
        elif text == prune.orphan_text:
            counts["healed"] += 1
        else:
            assert text == prune.interrupt_text, tool_id
            counts["neutralised"] += 1
    return counts


async def load(store: SessionStore, key: SessionKey) -> list[dict[str, Any]]:
    entries = await store.load(key)
    assert entries is not None, "the benchmark transcript is missing"
    return cast("list[dict[str, Any]]", entries)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=70)
    parser.add_argument("--calls", type=int, default=23, help="tool calls per round (average)")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--compactions", type=int, default=0, help="compactions in the transcript")
    parser.add_argument("--no-postgres", action="store_true", help="time SQLite only")
    add_smoke(parser)
    args = parser.parse_args()
    if args.smoke:
        args.rounds, args.calls, args.runs = 8, 3, 1  # 8: the fewest rounds its three outages fit in
    if args.no_postgres:
        return await measure(args, None)
    with LocalPostgres() as server:
        return await measure(args, server)


async def measure(args: argparse.Namespace, server: LocalPostgres | None) -> int:

    t0 = time.perf_counter()
    entries = Generator(args.seed).build(args.rounds, args.calls, args.compactions)
    gen_s = time.perf_counter() - t0

    with tempfile.TemporaryDirectory(prefix="flower-bench-") as tmp:
        base = Path(tmp)
        db = base / "sessions.db"
        workspace = base / "ws"
        workspace.mkdir()
        plain = SqliteSessionStore(db)
        await plain.append(KEY, cast("list[SessionStoreEntry]", entries))
        policy, prune, ephemeral = TrimPolicy(), PrunePolicy(), EphemeralPolicy()
        layered = PruningSessionStore(db, workspace, policy=policy, prune=prune, ephemeral=ephemeral)
        pg: list[SessionStore] = []
        if server is not None:
            pg_plain = PostgresSessionStore(server.url())
            t0 = time.perf_counter()
            await pg_plain.append(KEY, cast("list[SessionStoreEntry]", entries))
            pg_write = time.perf_counter() - t0
            pg_layered = PruningSessionStore(
                PostgresSessionStore(server.url()), workspace, policy=policy, prune=prune, ephemeral=ephemeral
            )
            pg = [pg_plain, pg_layered]
        try:
            stored = sum(f.stat().st_size for f in base.glob("sessions.db*"))  # noqa: ASYNC240 - a figure
            payload = sum(len(json.dumps(e, ensure_ascii=False).encode()) for e in entries)
            raw = visible_chars(entries)
            messages = sum(e["type"] in ("user", "assistant") for e in entries)
            print(
                f"transcript: {args.rounds} rounds, {len(entries)} entries ({messages} messages), "
                f"{len(results(entries))} tool results, {args.compactions} compactions, "
                f"generated in {gen_s:.1f}s"
            )
            print(f"stored:     {payload / 1e6:.1f} MB of JSON, sessions.db {stored / 1e6:.1f} MB")
            if pg:
                print(f"            the same rows into PostgreSQL in one append: {pg_write * 1000:.0f} ms")
            print(
                f"sent:       {len(sent(entries))} of {messages} messages are on the live chain and reach "
                f"the model: {raw:,} chars, {sent_tokens(entries) / 1000:.1f}K tokens"
            )

            t0 = time.perf_counter()
            first = await load(layered, KEY)  # the transcript is old: its cache is gone, decide
            cold = time.perf_counter() - t0
            first_report = dict(layered.last_report)
            pg_cold = 0.0
            if pg:
                t0 = time.perf_counter()
                assert await load(pg[1], KEY) == first, "PostgreSQL's layered load differs from SQLite's"
                pg_cold = time.perf_counter() - t0
            stores: list[SessionStore] = [plain, layered, *pg]
            times: list[list[float]] = [[] for _ in stores]
            for _ in range(args.runs):
                for store, runs in zip(stores, times, strict=True):
                    gc.collect()  # every store starts from the same heap state
                    t0 = time.perf_counter()
                    loaded = await load(store, KEY)
                    runs.append(time.perf_counter() - t0)
                    assert loaded == (entries if store in (plain, *pg[:1]) else first), "loads differ"
            plain_times, layered_times = times[0], times[1]
            loaded = first

            p, q = statistics.median(plain_times), statistics.median(layered_times)
            print()
            for name, median, runs in (
                ("SqliteSessionStore.load() ", p, plain_times),
                ("PruningSessionStore.load()", q, layered_times),
            ):
                listed = ", ".join(f"{x * 1000:.0f}" for x in runs)
                print(f"{name}  median {median * 1000:8.1f} ms   (runs: {listed})")
            print(f"{'':28}first  {cold * 1000:8.1f} ms   (decides, writes the spill files)")
            print(f"ratio layered / plain:      {q / p:.2f}x  (+{(q - p) * 1000:.1f} ms per resume)")
            if pg:
                pp, pq = statistics.median(times[2]), statistics.median(times[3])
                print()
                rows = [
                    ("plain store", p, pp),
                    ("all layers (PruningSessionStore)", q, pq),
                    ("first layered load (decides)", cold, pg_cold),
                ]
                print(
                    f"load() at this scale, median of {args.runs} runs    SQLite   PostgreSQL   PG / SQLite"
                )
                for label, lite, post in rows:
                    print(f"  {label:<34}{lite * 1000:7.1f} ms {post * 1000:8.1f} ms   {post / lite:8.2f}x")

            seen = visible_chars(loaded)
            print()
            print(
                f"report: {first_report}, pruned entries {layered.pruned}, "
                f"denials dropped {layered.denials_dropped}"
            )
            print(
                f"model sees {seen:,} of {raw:,} chars, {sent_tokens(loaded) / 1000:.1f}K of "
                f"{sent_tokens(entries) / 1000:.1f}K tokens: {1 - seen / raw:.1%} of what the CLI would "
                "send is left out"
            )

            counts = verify(entries, loaded, prune, workspace)
            spill_dir = workspace / policy.spill_dirname
            spilled_bytes = (
                sum(f.stat().st_size for f in spill_dir.glob("*.txt")) if spill_dir.exists() else 0
            )
            print(
                f"verified: {counts['spilled']} spilled results read back byte for byte "
                f"({spilled_bytes / 1e6:.2f} MB in {spill_dir.relative_to(base)}), "
                f"{counts['expired']} expired, {counts['removed']} removed with their calls, "
                f"{counts['unchanged']} untouched"
            )
            plain_again = await load(plain, KEY)
            assert plain_again == entries, "SQLite rows changed"
            print("verified: SQLite still returns the original entries")
        finally:
            layered.close()
            plain.close()
            for store in pg:
                cast("Any", store).close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
