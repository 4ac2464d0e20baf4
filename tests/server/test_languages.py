"""The server speaks the language the editor sends as InitializeParams.locale (docs/i18n.md):
an English-speaking client and a Chinese one, each with Neovim 0.7's stock capabilities, so
that everything the server says comes as plain showMessage, message requests and progress."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import client_capabilities

from flower.sim import scenarios

ASK = {"ask": {"question": scenarios.QUESTION, "options": scenarios.OPTIONS}}
STEP = {"step": {"name": "确认需求", "index": 1, "total": 3}}

# what each client must read; the question itself, the options and the step name are not flower's
# words and stay as they are
SPOKEN = {
    "en": {
        "banner": "<- continuing in {ws} where it stopped  brief confirmed · wake 1",
        "refusal": "Nothing is running in ws: continue or start a run first.",
        "asks": "Flower asks (q1, ws): " + scenarios.QUESTION,
        "how": "Pick an answer, or answer in your own words with the command flower.answer",
        "skip": "Skip (the agent decides)",
        "begin": "starting",
        "end": "finished",
    },
    "zh-cn": {
        "banner": "<- 在 {ws} 接上上次  需求已确认 · 第 1 次唤醒",
        "refusal": "ws 里没有在跑的运行:先接着做或者开一个。",
        "asks": "Flower 提问(q1,ws):" + scenarios.QUESTION,
        "how": "选一个答案,或者用命令 flower.answer",
        "skip": "跳过(让它自己判断)",
        "begin": "正在开始",
        "end": "跑完了",
    },
}


def stock() -> types.ClientCapabilities:
    return client_capabilities("neovim@v0.7.0")


def shown(s: Any) -> list[str]:
    return [m.message for m in s.client.messages]


@pytest.mark.parametrize("locale", SPOKEN)
async def test_the_real_engines_banner_and_a_refusal_in_the_clients_language(
    locale, sim_factory, sim_lsp, workspace: Path
):
    words = SPOKEN[locale]
    notes = workspace / ".flower" / "notes"
    notes.mkdir(parents=True)
    (notes / "需求.md").write_text(scenarios.BRIEF + "\n", encoding="utf-8")  # a brief to continue from
    sim = sim_factory(scenarios.starter_scenario())
    async with sim_lsp(sim, capabilities=stock(), locale=locale) as s:
        banner = words["banner"].format(ws=workspace)
        await s.until(lambda: banner in shown(s), what=f"the banner {banner!r} among {shown(s)}")
        result = await s.command("flower.say", {"text": "hello"})
        assert result["ok"] is False and result["message"] == words["refusal"]
        await s.until(lambda: f"flower: {words['refusal']}" in shown(s), what="the refusal shown")


@pytest.mark.parametrize("locale", SPOKEN)
async def test_a_question_and_the_progress_in_the_clients_language(locale, fake_lsp, script):
    words = SPOKEN[locale]
    script([STEP, ASK, {"end_step": {"name": "确认需求", "cost_usd": 0.1}}])
    async with fake_lsp(capabilities=stock(), options={"timeout_s": 60}, locale=locale) as s:
        # the person picks the first option of the question
        s.answer_offer = lambda params: params.actions[0] if params.message.startswith("Flower") else None
        await s.command("flower.start", {"ask": "X"})
        await s.until(
            lambda: any(isinstance(v, types.WorkDoneProgressEnd) for v in s.progress()), what="the end"
        )
        [question] = [o for o in s.offers if o.actions and len(o.actions) == 3]
        lines = question.message.splitlines()
        assert lines[0] == words["asks"] and lines[1].startswith(words["how"])
        assert [a.title for a in question.actions or []] == [*scenarios.OPTIONS, words["skip"]]
        [begin] = [v for v in s.progress() if isinstance(v, types.WorkDoneProgressBegin)]
        assert begin.title == "Flower · ws" and begin.message == words["begin"]
        [end] = [v for v in s.progress() if isinstance(v, types.WorkDoneProgressEnd)]
        assert end.message == words["end"]
