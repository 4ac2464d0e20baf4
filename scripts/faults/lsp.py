"""Language-server faults: generated sequences of what an editor session can do to the server while
a real run goes on in its folder (the real engine, the bundled Claude Code CLI, flower.sim).

Each case starts the scripted starter flow from a client on raw pipes (flower.sim.lsp_pipe), then
applies two to four faults drawn at random: a flood (hundreds to 2,000 requests within two
seconds), a huge frame (1-25 MB: a document, a Say, a request with junk), malformed frames, a
client that vanishes (its pipe closes, mid-question or mid-step), or a server killed outright.
After a vanish or a kill the next client starts a new server on the same folder. At the end a
client continues the run (or starts it again when nothing was frozen yet) to its end.

Checked, as a user would: every request sent to a server that stayed up was answered (a result
or an error with a one-line message) within 30 s; a server whose client vanished exits within
30 s (never stuck on a question); no traceback in any answer, message or the server's stderr;
lineage.json and manifest.json parse; the final run finishes, with the work step's session
unchanged when one was recorded before the faults.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from pathlib import Path
from typing import Any

from faults.tally import Context, Tally, shows_traceback
from flower.sim.env import isolated_env
from flower.sim.lsp_pipe import LspPipe, encode, frame
from flower.sim.scenarios import QUESTION, resumable_starter_scenario
from flower.sim.server import SimServer

CLASS = "lsp"
ABOUT = "floods, huge and malformed frames, vanishing clients and killed servers during a real run"

REQUEST = "写一个 hello.py"
KINDS = ("flood", "huge", "malformed", "vanish", "kill")
ANSWER_S = 30.0  # every request is answered within this
RUN_S = 300.0
MB = 1000 * 1000


class Case:
    def __init__(self, ctx: Context, n: int) -> None:
        rng = ctx.rng
        self.rng = random.Random(rng.random())
        self.faults = [rng.choice(KINDS) for _ in range(rng.randint(2, 4))]
        self.bash_s = round(rng.uniform(0.5, 4.0), 1)  # how long the worker's command takes
        self.name = f"#{n} {' → '.join(self.faults)}"
        self.root = ctx.workdir / f"case-{n}"


class Session:
    """The servers of one case, one after another, and what every one of them said."""

    def __init__(self, case: Case, env: dict[str, str], ws: Path, tally: Tally) -> None:
        self.case, self.env, self.ws, self.tally = case, env, ws, tally
        self.servers: list[LspPipe] = []
        self.server = self.start()

    def start(self, *, answering: bool = True) -> LspPipe:
        server = LspPipe(self.env, self.ws)
        if answering:
            server.answers["flower/ask"] = lambda params: {"answer": (params.get("options") or ["hello"])[0]}
        server.initialize(self.ws, options={"timeout_s": 600})
        self.servers.append(server)
        return server

    def expect(self, keys: list[str], what: str) -> None:
        """Every one of `keys` answered within ANSWER_S, clearly."""
        missing = self.server.wait(keys, ANSWER_S)
        if missing:
            self.tally.unanswered += len(missing)
            self.tally.fail(self.case.name, f"{what}: {len(missing)} of {len(keys)} requests unanswered")
        for key in set(keys) - set(missing):
            error = self.server.responses[key].get("error")
            if error is not None and (set(error) - {"code", "message"} or "\n" in str(error.get("message"))):
                self.tally.fail(self.case.name, f"{what}: an error that is not one line: {error}")

    # -- the faults ---------------------------------------------------------------------------
    def flood(self) -> None:
        rng, folder = self.case.rng, self.ws.as_uri()
        count, within = rng.randint(200, 2000), rng.uniform(0.5, 2.0)
        shapes: list[tuple[str, Any]] = [
            ("flower/state", {}),
            ("flower/state", {"folder": folder}),
            (
                "workspace/executeCommand",
                {"command": "flower.answer", "arguments": [{"id": "nope", "text": "x"}]},
            ),
            ("workspace/executeCommand", {"command": "flower.say", "arguments": [{"text": 7}]}),
            ("flower/teleport", {}),
            ("textDocument/codeAction", "not params"),
        ]
        keys, began = [], time.monotonic()
        for n in range(count):
            method, params = shapes[rng.randrange(len(shapes))]
            keys.append(self.server.request(method, params))
            if n % 50 == 49:
                time.sleep(max(0.0, began + within * (n + 1) / count - time.monotonic()))
        self.expect(keys, f"a flood of {count} requests in {within:.1f} s")

    def huge(self) -> None:
        rng = self.case.rng
        size = rng.randint(1, 25) * MB
        kind = rng.choice(("document", "say", "junk"))
        if kind == "document":
            goal = self.ws / ".flower" / "notes" / "目标.md"
            item = {
                "uri": goal.as_uri(),
                "languageId": "markdown",
                "version": 1,
                "text": "- [ ] " + "长" * (size // 3),
            }
            self.server.notify("textDocument/didOpen", {"textDocument": item})
            keys = [self.server.request("flower/state", {})]
        elif kind == "say":
            keys = [self.server.command("flower.say", {"text": "x" * size})]
        else:
            keys = [self.server.request("flower/state", {"junk": "y" * size})]
        keys.append(self.server.request("flower/state", {}))
        self.expect(keys, f"a {size // MB} MB {kind}")

    def malformed(self) -> None:
        rng = self.case.rng
        keys = []
        for n in range(rng.randint(5, 40)):
            body = json.dumps({"jsonrpc": "2.0", "id": f"m{n}", "method": "flower/state"}).encode()
            choice = rng.randrange(5)
            if choice == 0:
                self.server.send_bytes(bytes(rng.randrange(256) for _ in range(rng.randint(1, 400))))
            elif choice == 1:
                self.server.send_bytes(frame(b"{" + bytes(rng.randrange(32, 127) for _ in range(50))))
            elif choice == 2:
                self.server.send_bytes(frame(b"\xff\xfe" + body))
            elif choice == 3:
                self.server.send_bytes(encode({"jsonrpc": "1.0", "id": f"v{n}", "method": "flower/state"}))
            else:
                self.server.send_bytes(frame(json.dumps([1, "two", None]).encode()))
            keys.append(self.server.request("flower/state", {}))  # the probe after each
        self.expect(keys, "malformed frames")

    def vanish(self) -> None:
        server = self.server
        server.vanish()
        try:
            server.proc.wait(ANSWER_S)
        except Exception:
            self.tally.unanswered += 1
            self.tally.fail(
                self.case.name, f"the server did not stop within {ANSWER_S:.0f} s of its client vanishing"
            )
            server.kill()
        self.server = self.start()
        self.go_on()

    def kill(self) -> None:
        self.server.kill()
        self.server = self.start()
        self.go_on()

    def go_on(self) -> None:
        """The next client presses Continue at once, sometimes: the next faults meet a running step."""
        if self.case.rng.random() < 0.5:
            self.expect([self.server.command("flower.continue")], "Continue after a restart")

    # -- the end --------------------------------------------------------------------------------
    def finish(self) -> bool:
        """Continue (or start again) until the run ends; True when it finished."""
        server = self.server
        for _ in range(3):
            reply = server.result(server.command("flower.continue"), ANSWER_S)["result"]
            if not reply["ok"] and reply.get("offer") == "start":
                reply = server.result(server.command("flower.start", {"ask": REQUEST}), ANSWER_S)["result"]
            if reply["ok"] or "already" not in reply["message"]:
                break
            server.until(lambda: _ended(server), RUN_S)  # a run still going from before: let it end
        if not reply["ok"]:
            self.tally.fail(self.case.name, f"the last client could not go on: {reply['message']}")
            return False
        if not server.until(lambda: _ended(server), RUN_S):
            self.tally.fail(self.case.name, f"the run did not end within {RUN_S:.0f} s")
            return False
        phase = _ended(server)
        if phase != "finished":
            self.tally.fail(self.case.name, f"the run ended {phase}: {server.events('run')[-1]['text']}")
        return phase == "finished"

    def tracebacks(self) -> int:
        shown = 0
        for server in self.servers:
            said = [
                json.dumps(m, ensure_ascii=False) for m in [*server.responses.values(), *server.notifications]
            ]
            stderr = bytes(server.stderr).decode("utf-8", errors="replace")
            shown += sum(shows_traceback(text) for text in [*said, stderr])
        return shown

    def close(self) -> None:
        for server in self.servers:
            if server.proc.poll() is None:
                server.close(ANSWER_S)


def _ended(server: LspPipe) -> str | None:
    for event in reversed(server.events("run")):
        phase = event.get("payload", {}).get("phase")
        if phase in ("finished", "failed", "stopped"):
            return str(phase)
    return None


def _books_whole(run_dir: Path) -> list[str]:
    broken = []
    for name in ("lineage.json", "manifest.json"):
        path = run_dir / name
        if path.exists():
            try:
                json.loads(path.read_text(encoding="utf-8"))
            except (ValueError, OSError) as exc:
                broken.append(f"{name}: {exc}")
    return broken


def _work_session(run_dir: Path) -> str | None:
    try:
        steps = json.loads((run_dir / "lineage.json").read_text(encoding="utf-8")).get("steps", {})
    except (ValueError, OSError):
        return None
    value = steps.get("干活") if isinstance(steps, dict) else None
    return value if isinstance(value, str) else None


def _one_case(case: Case, tally: Tally) -> None:
    ws = case.root / "proj"
    ws.mkdir(parents=True)
    with SimServer(resumable_starter_scenario(bash_seconds=case.bash_s)) as sim:
        env = {**os.environ, **isolated_env(sim.base_url, case.root / "claude"), "PYTHONUNBUFFERED": "1"}
        # mid-question: the first client does not answer the clarifier when a vanish comes first
        session = Session(case, env, ws, tally)
        if case.faults[0] == "vanish":
            session.server.answers.pop("flower/ask", None)
        try:
            session.server.result(session.server.command("flower.start", {"ask": REQUEST}), ANSWER_S)
            asked = lambda: any(a.get("params", {}).get("question") == QUESTION for a in session.server.asked)  # noqa: E731
            session.server.until(asked, RUN_S)
            for fault in case.faults:
                time.sleep(case.rng.uniform(0.0, 3.0))  # somewhere in the run, not on a signal
                getattr(session, fault)()
            before = _work_session(ws / "runs")
            if session.finish():
                after = _work_session(ws / "runs")
                if before is not None and after != before:
                    tally.fail(case.name, f"the work step started over: session {before} became {after}")
                else:
                    tally.continued += 1
        finally:
            session.close()
        broken = _books_whole(ws / "runs")
        tally.lost_or_corrupted += len(broken)
        for line in broken:
            tally.fail(case.name, line)
        shown = session.tracebacks()
        tally.tracebacks_shown += shown
        if shown:
            tally.fail(case.name, f"{shown} tracebacks in what the servers said")


def run(ctx: Context) -> Tally:
    tally = Tally()
    kinds: dict[str, int] = {}
    for n in range(1, ctx.cases + 1):
        case = Case(ctx, n)
        tally.tried += 1
        for fault in case.faults:
            kinds[fault] = kinds.get(fault, 0) + 1
        try:
            _one_case(case, tally)
        except Exception as exc:  # the case's own machinery failed: a broken promise all the same
            tally.fail(case.name, f"{type(exc).__name__}: {exc}")
        if not ctx.keep:
            shutil.rmtree(case.root, ignore_errors=True)
    tally.notes.append("faults applied: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    return tally
