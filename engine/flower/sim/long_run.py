"""A long starter run for flower.sim: many judged rounds, a question mid-work, a handoff.

The coordinator's context grows by a fixed step every turn (its usage is scripted), so the run
crosses the handoff threshold it is given at a known round: the session writes its handoff
document (answered by a rule) and a fresh session finishes that round and goes on from a small
context. The judge rejects every round but the last, naming one check each time; a later wake
continues the same work session and is accepted at once. Used by the history's tests, the
editor's tests and the benchmark of an HT001-scale run.
"""

from __future__ import annotations

from collections.abc import Callable

from .scenario import ScenarioData, TurnData
from .scenarios import delegate as _delegate
from .scenarios import proof, starter_scenario

CHECKS = (
    "运行 `python3 hello.py` 输出 hello",
    "工作区根目录有 README.md,写了怎么运行",
    "hello.py 只用标准库",
    "README.md 写明了 Python 的最低版本",
)
GOAL = "## 目标\n交付能运行的 hello.py,并写明用法。\n\n## 判定清单\n" + "".join(f"- {c}\n" for c in CHECKS)
WORK_QUESTION = "README 用中文还是英文写?"
WORK_OPTIONS = ["中文", "English"]
HANDOFF_REPLY = (
    "## 现在在做什么\n按判定者的反馈逐轮补 README.md。\n\n"
    "## 已经定下的\nhello.py 只用标准库:判定清单要求。\n\n"
    "## 走不通的路\n无\n\n"
    "## 下一步\n补上判定者最近一轮指出的缺口。\n\n"
    "## 现场\nhello.py, README.md"
)
HANDOFF_MARK = "写一份交接书"  # in the prompt a session gets when it must write its handoff


# how the judge verified each check when it accepts: the one file the worker wrote, read by its look
# (a scripted judge: its words need not be true, only backed by a call it really made)
LOOK: TurnData = {"tools": [{"name": "Read", "input": {"file_path": "hello.py"}}]}
EVIDENCE = proof(list(CHECKS), "hello.py")


def verdict_text(round_no: int, failed: str | None) -> str:
    if failed is None:
        return f"## 结论\n达成\n\n## 理由\n第 {round_no} 轮:清单逐条满足。\n\n## 未通过\n无" + EVIDENCE
    return f"## 结论\n未达成\n\n## 理由\n第 {round_no} 轮:还差一条。\n\n## 未通过\n- {failed}"


def _judged(round_no: int, failed: str | None) -> list[TurnData]:
    """A judge's turn: an accepting one looks first (the real Read tool), as achieved needs proof."""
    text: TurnData = {"text": verdict_text(round_no, failed)}
    return [text] if failed is not None else [LOOK.copy(), text]


def long_run_scenario(
    *,
    rounds: int = 20,
    threshold: int = 150_000,
    start: int = 28_700,
    growth: int = 8_000,
    fresh: int = 30_000,
    question_round: int | None = 2,
    wakes: int = 0,
    report_chars: int = 0,
    delegate_every_round: bool = False,
    tool_output_bytes: int = 0,
) -> ScenarioData:
    """`rounds` judged rounds (the last accepted), then `wakes` wakes of one accepted round each.

    The coordinator's turns report `start`, `start + growth`, ... tokens of context; the first
    turn at or past `threshold` (the run's handoff threshold: the window less a quarter) is handed over
    and the successor starts again from `fresh`. `question_round` asks the person a question
    in that round (None: no question but the clarifier's). For transcripts of a realistic size
    (benchmarks): `report_chars` pads every report (the coordinator's and the worker's) to about
    that many characters; `delegate_every_round` has the worker run a command printing
    `tool_output_bytes` bytes in every round, not only the first.
    """
    if rounds < 1:
        raise ValueError("a run has at least one round")
    used = start
    coordinator: list[TurnData] = []

    def say(turn: TurnData) -> None:
        nonlocal used
        turn["usage"] = {"input_tokens": used}
        coordinator.append(turn)
        if used >= threshold:
            # the runtime hands over after this turn; the successor finishes the round
            used = fresh
            coordinator.append({"text": "接手了交接书,这一轮接着做完了。", "usage": {"input_tokens": used}})
        used += growth

    coder: list[TurnData] = []

    def delegate(task: str) -> None:
        say(_delegate(task))
        command = "printf 'print(\"hello\")\\n' > hello.py && python3 hello.py"
        if tool_output_bytes:
            command += f" && head -c {tool_output_bytes} /dev/zero | tr '\\0' x"
        coder.append({"tool": {"name": "Bash", "input": {"command": command}}})
        coder.append(
            report("结论:hello.py 写好了。\n依据:python3 hello.py 输出 hello。\n产物:hello.py\n未验证:无")
        )

    def report(text: str) -> TurnData:
        if len(text) >= report_chars:
            return {"text": text}
        filler = "细节:已核对。"
        return {
            "text": text + "\n" + (filler * (report_chars // len(filler) + 1))[: report_chars - len(text)]
        }

    for r in range(1, rounds + 1):
        if r == 1 or delegate_every_round:
            delegate("写 hello.py:运行时打印 hello。写完跑一次确认输出。")
        if r == question_round:
            say(
                {
                    "tool": {
                        "name": "mcp__human__ask",
                        "input": {"question": WORK_QUESTION, "options": WORK_OPTIONS},
                    }
                }
            )
        say(report(f"第 {r} 轮做完了:按判定者的反馈补齐了。"))
    for w in range(wakes):
        say(report(f"第 {w + 2} 次唤醒:上次的活已经做完,清单逐条满足。"))

    judge = [
        turn
        for r in range(1, rounds + 1)
        for turn in _judged(r, CHECKS[r % len(CHECKS)] if r < rounds else None)
    ]
    judge += [turn for _ in range(wakes) for turn in _judged(1, None)]
    base = starter_scenario()
    return {
        "actors": base["actors"],
        "scripts": {
            "clarifier": base["scripts"]["clarifier"],
            "goal_setter": [{"text": GOAL}],
            "coordinator": coordinator,
            "coder": coder,
            "judge": judge,
        },
        "rules": [
            {
                "actor": "coordinator",
                "when": {"last_user_contains": HANDOFF_MARK},
                "reply": {"text": HANDOFF_REPLY},
            }
        ],
        "default": {"text": "(flower.sim: this actor's script is used up)"},
    }


def editor_scenario() -> ScenarioData:
    """Three rounds (two rejected), a question in round 2, a handoff in round 2 under the default
    1M window (threshold 750K), and one wake accepted at once: what the editor's history tests walk
    through."""
    return long_run_scenario(rounds=3, threshold=750_000, start=690_000, growth=20_000, fresh=40_000, wakes=1)


def twenty_rounds_scenario() -> ScenarioData:
    """Twenty rounds under a 200K window (threshold 150K): one handoff, at round 15."""
    return long_run_scenario(rounds=20, threshold=150_000)


# what `python -m flower.sim serve --scenario NAME` serves besides the starter scenarios
NAMED: dict[str, Callable[[], ScenarioData]] = {
    "history": editor_scenario,
    "twenty-rounds": twenty_rounds_scenario,
}
