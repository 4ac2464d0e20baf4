"""Ready-made scenarios: a whole scripted starter run (clarify -> goal -> work under a judge).

Used by `flower demo`, the engine's tests, the language server's tests and the extension's.
Each role is recognised by the rule text flower puts in its system prompt.
"""

from __future__ import annotations

from collections.abc import Callable

from .scenario import MatcherData, RuleData, ScenarioData, ToolCall, TurnData

QUESTION = "hello.py 要打印什么?"
OPTIONS = ["hello", "hello, flower"]
BRIEF = (
    "## 目标\n写一个 hello.py,运行时打印问候语。\n\n"
    "## 验收标准\n运行 python3 hello.py 输出 hello;仓库里有 README.md 说明怎么运行。\n\n"
    "## 边界\n只用 Python 标准库,不联网。\n\n"
    "## 未知与假设\n问候语按人的回答来定。"
)
GOAL = (
    "## 目标\n交付能运行的 hello.py,并写明用法。\n\n"
    "## 判定清单\n"
    "- 运行 `python3 hello.py` 输出 hello\n"
    "- 工作区根目录有 README.md,写了怎么运行\n"
    "- hello.py 只用标准库\n"
)
# the scripted workers' shell lines: the files the starter goal's checklist asks for
HELLO_PY = "printf 'print(\"hello\")\\n' > hello.py"
README_MD = "printf '# hello\\n\\nRun: python3 hello.py\\n' > README.md"
WRITE_HELLO = f"{HELLO_PY} && {README_MD}"
CHECKS = [line[2:] for line in GOAL.splitlines() if line.startswith("- ")]
# the fourth section of a verdict: how each check was verified, citing what the judge's look did
EVIDENCE = {
    "not_yet": (
        "\n\n## 证据\n"
        f'- {CHECKS[0]} — 读了 hello.py 第 1 行:print("hello")\n'
        f"- {CHECKS[1]} — 读 README.md:文件不存在\n"
        f"- {CHECKS[2]} — 读了 hello.py,没有 import"
    ),
    "achieved": (
        "\n\n## 证据\n"
        f'- {CHECKS[0]} — 读了 hello.py 第 1 行:print("hello")\n'
        f"- {CHECKS[1]} — 读了 README.md,写着 Run: python3 hello.py\n"
        f"- {CHECKS[2]} — 读了 hello.py,没有 import"
    ),
    "unreachable": f"\n\n## 证据\n- {CHECKS[2]} — 读了 hello.py,但看不出来",
}
# the seeds' three sections, as a judge that looked at nothing would write them
BARE_VERDICTS = {
    "not_yet": (
        "## 结论\n未达成\n\n## 理由\nhello.py 能运行,但没有 README.md。\n\n"
        "## 未通过\n- 工作区根目录有 README.md,写了怎么运行"
    ),
    "achieved": "## 结论\n达成\n\n## 理由\nhello.py 输出 hello,README.md 写了用法。\n\n## 未通过\n无",
    "unreachable": (
        "## 结论\n无法验证\n\n## 理由\n这个环境里看不到问候语要给谁看。\n\n## 未通过\n- hello.py 只用标准库"
    ),
}
# what the scripted judge says after looking: the three sections and its evidence
VERDICTS = {state: text + EVIDENCE[state] for state, text in BARE_VERDICTS.items()}


def _read(path: str) -> ToolCall:
    return {"name": "Read", "input": {"file_path": path}}


# the scripted judge's look before every verdict: the real Read tool on what the checks name
LOOK: TurnData = {"tools": [_read("hello.py"), _read("README.md")]}


def judged(verdict: str, *, look: TurnData | None = LOOK) -> list[TurnData]:
    """One judge turn as a script: the look first (real tool calls), then the verdict `verdict`
    (a state of VERDICTS, or a verdict's own text). ``look=None``: a judge that looks at nothing."""
    text = VERDICTS.get(verdict, verdict)
    return [look, {"text": text}] if look is not None else [{"text": text}]


def proof(checks: list[str], path: str) -> str:
    """A verdict's fourth section saying every one of `checks` was verified by reading `path`."""
    return "\n\n## 证据\n" + "\n".join(f"- {c} — 读了 {path}" for c in checks)


def looked(text: str, *paths: str) -> list[TurnData]:
    """A judge's turn that reads `paths` (the real Read tool) before it says `text`."""
    return [{"tools": [_read(p) for p in paths]}, {"text": text}]


def judge_script(verdicts: tuple[str, ...], *, look: TurnData | None = LOOK) -> list[TurnData]:
    """The judge's script for rounds ruled `verdicts` in order, each looked at first."""
    return [turn for v in verdicts for turn in judged(v, look=look)]


HANDOVER = (
    "## 这是什么项目\n一个 hello.py:运行时打印问候语,附 README.md 说明怎么运行。已完成。\n\n"
    "## 验收(做到了的、没做到的)\n- 做到了:python3 hello.py 输出 hello\n- 做到了:README.md 写了运行方法\n\n"
    "## 生成的文件(由什么生成,别手改)\n无\n\n"
    "## 走过的死路\n无\n\n"
    "## 工作台(在哪、怎么读)\n.flower/:先读 INDEX.md;需求在 notes/需求.md,判定清单在 notes/目标.md。"
)
# the oracle's answer to any side question
ASIDE_ANSWER = "现在在干活这一步:coder 写好了 hello.py,判定者在核对 README.md。"
# what flower asks the final session for; and the oracle's role text
HANDOVER_ASKED = "给下一个来接手这个工作区的工具"
ORACLE_ROLE = "你的角色:旁路问答"

# Each role of the starter flow, recognised by the rule text flower puts in its system prompt.
STARTER_ACTORS: dict[str, MatcherData] = {
    "clarifier": {"system": "你的角色:确认者"},
    "goal_setter": {"system": "你的角色:判定者", "first_user_contains": "请据此设定目标"},
    "judge": {"system": "你的角色:判定者", "first_user_contains": "判定这一轮"},
    # before the coordinator: the handover turn resumes the coordinator's session
    "handover": {"system": "你的角色:协调者", "last_user_contains": HANDOVER_ASKED},
    "coordinator": {"system": "你的角色:协调者"},
    "coder": {"system": "你负责实现"},
    "oracle": {"system": ORACLE_ROLE},
}


def _bash(command: str) -> TurnData:
    return {"tool": {"name": "Bash", "input": {"command": command, "description": command[:40]}}}


def delegate(prompt: str, *, to: str = "coder") -> TurnData:
    """A coordinator's turn that hands `prompt` to the subagent `to` and waits for its report."""
    task = {"subagent_type": to, "description": prompt[:30], "prompt": prompt, "run_in_background": False}
    return {"text": f"派给 {to}。", "tool": {"name": "Agent", "input": task}}


def starter_scenario(
    *, verdicts: tuple[str, ...] = ("not_yet", "achieved", "achieved"), context: int = 0
) -> ScenarioData:
    """A full starter run, plus one wake-up: the judge's rulings follow `verdicts` in order; the
    handover at the end of each run and any side question have one answer each.

    `context` adds that many tokens to every reported context size (to show the meter move).
    """
    return {
        "context_offset": context,
        "actors": dict(STARTER_ACTORS),
        "scripts": {
            "clarifier": [
                {"tool": {"name": "mcp__human__ask", "input": {"question": QUESTION, "options": OPTIONS}}},
                {"text": BRIEF},
            ],
            "goal_setter": [{"text": GOAL}, {"text": GOAL}],
            "coordinator": [
                delegate("写 hello.py:运行时打印 hello。写完跑一次确认输出。"),
                {"text": "这一轮做完了:hello.py 已写好并验证输出 hello。"},
                delegate("补一个 README.md,写明运行方法:python3 hello.py。"),
                {"text": "补上了 README.md。hello.py 与 README.md 都在工作区根目录。"},
                {"text": "上次的活已经做完:hello.py 和 README.md 都在,判定清单逐条满足。"},
            ],
            "coder": [
                _bash(f"{HELLO_PY} && python3 hello.py"),
                {
                    "text": (
                        "结论:hello.py 写好了。\n依据:python3 hello.py 输出 hello。\n产物:hello.py\n未验证:无"
                    )
                },
                _bash(README_MD),
                {"text": "结论:README.md 写好了。\n依据:文件已创建。\n产物:README.md\n未验证:无"},
            ],
            "judge": judge_script(verdicts),
        },
        # as often as they are asked: every run ends with a handover, any moment may get a side question
        "rules": [
            {"actor": "handover", "reply": {"text": HANDOVER}},
            {"actor": "oracle", "reply": {"text": ASIDE_ANSWER}},
        ],
        "default": {"text": "(flower.sim: this actor's script is used up)"},
    }


def resumable_starter_scenario(*, bash_seconds: float = 1.0) -> ScenarioData:
    """A starter run that every role answers by what its conversation already holds, not by turn
    count: stopped at any point and continued, it still runs to an achieved goal. For kill tests.

    The coder's command sleeps `bash_seconds` first, so a kill can land while a tool runs.
    """
    base = starter_scenario(verdicts=("achieved",))
    command = f"sleep {bash_seconds:g} && {HELLO_PY} && python3 hello.py"
    report = "结论:hello.py 写好了。\n依据:python3 hello.py 输出 hello。\n产物:hello.py\n未验证:无"

    def rule(actor: str, reply: TurnData, seen: str | None = None) -> RuleData:
        return {"actor": actor, "when": {"messages_contain": seen} if seen else {}, "reply": reply}

    ask: TurnData = {"tool": {"name": "mcp__human__ask", "input": {"question": QUESTION, "options": OPTIONS}}}
    return {
        "actors": base["actors"],
        "rules": [
            rule("clarifier", {"text": BRIEF}, seen=QUESTION),  # asked once already: the brief
            rule("clarifier", ask),
            rule("goal_setter", {"text": GOAL}),
            rule("coordinator", {"text": "这一轮做完了:hello.py 已写好并验证输出 hello。"}, seen=report[:16]),
            rule("coordinator", delegate("写 hello.py:运行时打印 hello。写完跑一次确认输出。")),
            rule("coder", {"text": report}, seen="printf"),
            rule("coder", _bash(command)),
            rule("judge", {"text": VERDICTS["achieved"]}, seen='"file_path"'),  # looked already
            rule("judge", LOOK),
        ],
        "default": {"text": "(flower.sim: no rule for this request)"},
    }


def prying_scenario(*, echoed: tuple[str, ...] = (), judge_runs: bool = True) -> ScenarioData:
    """A starter run whose worker (and judge, when `judge_runs`) print the environment and the
    workspace's .env, and whose coordinator and worker repeat `echoed` in their own words: what
    flower must keep out of everything it writes (tests of the redaction)."""
    looks = [
        _bash("env"),
        _bash("printenv"),
        _bash("printenv ANTHROPIC_API_KEY ANTHROPIC_AUTH_TOKEN"),
        _bash("cat .env"),
    ]
    said = " ".join(echoed)
    return {
        "actors": dict(STARTER_ACTORS),
        "scripts": {
            "clarifier": [{"text": BRIEF}],
            "goal_setter": [{"text": GOAL}],
            "coordinator": [
                delegate("看一眼环境"),
                {"text": f"worker saw {said}"},
                delegate("再看一眼"),
                {"text": "done"},
            ],
            "coder": [
                *looks,
                _bash("env; seq 1 1500"),  # long enough to be spilled to the workbench
                # the work the judge's look reads: its 达成 needs evidence it really saw
                _bash(WRITE_HELLO),
                {"text": f"结论:看完了\n依据:printenv 打印了 {said}\n产物:无\n未验证:无"},
                _bash("cat .env; printenv"),
                {"text": "结论:又看了一遍\n依据:无\n产物:无\n未验证:无"},
            ],
            "judge": [
                *(looks if judge_runs else []),
                *judged("not_yet"),
                *([_bash("cat .env && printenv")] if judge_runs else []),
                *judged("achieved"),
            ],
        },
        "default": {"text": "(flower.sim: this actor's script is used up)"},
    }


# A judge that may run commands (judge_can_run): it runs the program and reads both files (real
# tools, real results), and cites them check by check; README.md is three lines and a newline.
RUN_AND_READ: TurnData = {
    "tools": [
        {"name": "Bash", "input": {"command": "python3 hello.py", "description": "run it"}},
        _read("README.md"),
        _read("hello.py"),
    ]
}
RAN_EVIDENCE = (
    "\n\n## 证据\n"
    f"- {CHECKS[0]} — 跑了 `python3 hello.py`,退出码 0,输出 hello\n"
    f"- {CHECKS[1]} — 读了 README.md 第 1-4 行:{{readme}}\n"
    f"- {CHECKS[2]} — 读了 hello.py,没有 import\n"
)
RAN_VERDICTS = {
    "not_yet": (
        "## 结论\n未达成\n\n## 理由\nREADME.md 的运行说明不够。\n\n## 未通过\n- "
        + CHECKS[1]
        + RAN_EVIDENCE.format(readme="只写了一行命令,没说要 Python 3")
    ),
    "achieved": BARE_VERDICTS["achieved"] + RAN_EVIDENCE.format(readme="写着 Run: python3 hello.py"),
}
RAN_GOAL = "## 目标\n交付能运行的 hello.py,并写明用法。\n\n## 判定清单\n" + "".join(
    f"- {c}\n" for c in CHECKS
)
_REPORT = (
    "结论:hello.py 和 README.md 写好了。\n依据:python3 hello.py 输出 hello。\n"
    "产物:hello.py README.md\n未验证:无"
)


def judge_runs_scenario(
    judge: list[TurnData] | None = None,
    *,
    goal: str = RAN_GOAL,
    rounds: int = 2,
    write: str = WRITE_HELLO,
) -> ScenarioData:
    """The worker writes both files (`write`) in round 1 and only reports in the `rounds` - 1
    after; `judge` rules (by default: runs and reads, then not_yet on README.md; runs and reads
    again, then achieved)."""
    if judge is None:
        judge = [RUN_AND_READ, {"text": RAN_VERDICTS["not_yet"]}]
        judge += [RUN_AND_READ, {"text": RAN_VERDICTS["achieved"]}]
    return {
        "actors": dict(STARTER_ACTORS),
        "scripts": {
            "clarifier": [{"text": BRIEF}],
            "goal_setter": [{"text": goal}],
            "coordinator": [
                delegate("写 hello.py 和 README.md"),
                {"text": "这一轮做完了:hello.py 和 README.md 都写好了。"},
                *[TurnData(text="按判定者的反馈复核了一遍,文件都在。") for _ in range(rounds - 1)],
            ],
            "coder": [_bash(write), {"text": _REPORT}],
            "judge": judge,
        },
        "rules": [{"actor": "handover", "reply": {"text": HANDOVER}}],
        "default": {"text": "(flower.sim: this actor's script is used up)"},
    }


NAMED: dict[str, Callable[[], ScenarioData]] = {
    "starter": starter_scenario,
    "resumable-starter": resumable_starter_scenario,
    "judge-runs": judge_runs_scenario,
}
