"""问答记录.md read back: every way an ask settles, as HumanChannel wrote it."""

from __future__ import annotations

import asyncio
import time

from flower.core.human import HumanChannel, read_log


async def test_the_log_reads_back_every_way_an_ask_settled(tmp_path):
    log = tmp_path / "notes" / "问答记录.md"
    channel = HumanChannel(log_path=log, timeout_s=0.2, max_asks=3)

    async def person() -> None:
        first = await channel.next_ask()
        assert first is not None
        channel.answer(first.id, "第二个\n而且要快")
        second = await channel.next_ask()
        assert second is not None
        channel.decline(second.id, "不想答")

    helper = asyncio.create_task(person())
    before = time.time()
    answered = await channel.ask("用哪个?\n(两行的问题)", ["第一个", "第二个"])
    declined = await channel.ask("还要吗?")
    await helper
    timed_out = await channel.ask("没人回答的问题")
    over = await channel.ask("第四个问题")
    empty = await channel.ask("   ")

    asks = read_log(log)
    assert [(a.id, a.question, a.options, a.state, a.answer) for a in asks] == [
        ("q1", "用哪个?\n(两行的问题)", ["第一个", "第二个"], "answered", "第二个\n而且要快"),
        ("q2", "还要吗?", [], "declined", "不想答"),
        ("q3", "没人回答的问题", [], "timeout", ""),
        ("q4", "第四个问题", [], "over_budget", ""),
        ("q5", "", [], "invalid", ""),
    ]
    for written, read in zip([answered, declined, timed_out, over, empty], asks, strict=True):
        assert int(read.asked_at) == int(written.asked_at) >= int(before)  # the log keeps whole seconds
    assert [a.waited_s for a in asks[:3]] == [answered.waited_s, declined.waited_s, timed_out.waited_s]


def test_a_missing_or_foreign_log_reads_as_no_asks(tmp_path):
    assert read_log(tmp_path / "none.md") == []
    other = tmp_path / "other.md"
    other.write_text("# 笔记\n\n## 不是问答\n\n- 问:没有头\n", encoding="utf-8")
    assert read_log(other) == []
