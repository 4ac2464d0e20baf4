"""A hover on a checklist line of 目标.md: how the last verdict judged that check.

It says whether the check passed, failed, had no evidence or cannot be verified here, the
judge's own words for it, and what backs it: the command with its exit code and a head of its
output, or the file and lines read (a link into the workspace). The last verdict is the one this
server saw in a run (VerdictGiven), else the last one the folder's history on disk holds (a
restarted editor still hovers over the last run's checks).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import to_fs_path

from flower.base.i18n import _
from flower.core.events import Event, VerdictGiven
from flower.core.evidence import CHECK_WORDS
from flower.core.goal import locate_check

from .diagnostics import workspace_file
from .documents import same_document, uri_of
from .host import Feature, FlowerServer
from .last_verdict import LastVerdict, last_on_disk

if TYPE_CHECKING:
    from flower.core.evidence import Evidence

    from .run import Run

log = logging.getLogger(__name__)

EXCERPT_LINES = 12  # the most lines of a command's output a hover shows


def _fence(text: str) -> str:
    lines = text.strip().splitlines()
    if len(lines) > EXCERPT_LINES:
        lines = [*lines[:EXCERPT_LINES], "…"]
    body = "\n".join(lines)
    fence = "```"
    while fence in body:
        fence += "`"  # a fence longer than any run of backticks in the output
    return f"{fence}text\n{body}\n{fence}"


def backing(evidence: Evidence, root: Path | None) -> list[str]:
    """The Markdown lines saying what backs a check."""
    from flower.core.evidence import describe

    if evidence.kind == "command" and evidence.backed:
        code = "?" if evidence.exit_code is None else str(evidence.exit_code)
        out = [_("跑了 `{command}`,退出码 {code}").format(command=evidence.command, code=code)]
        if evidence.excerpt.strip():
            out += ["", _fence(evidence.excerpt)]
        return out
    if evidence.kind == "read" and evidence.backed:
        path = workspace_file(root, evidence.path)
        name = (
            f"[{evidence.path}]({uri_of(path)}#L{evidence.line or 1})" if path is not None else evidence.path
        )
        if evidence.line is not None and evidence.end_line is not None:
            return [
                _("读了 {path} 第 {line}-{end} 行").format(
                    path=name, line=evidence.line, end=evidence.end_line
                )
            ]
        return [_("读了 {path}").format(path=name)]
    return [describe(evidence)]


def hover_markdown(
    verdict: LastVerdict, line: int, checks: list[tuple[int, str]], root: Path | None
) -> str | None:
    """The hover of the checklist line `line` (0-based), or None when it is no check's line."""
    if not any(at == line for at, _c in checks):
        return None
    at = next((i for i, e in enumerate(verdict.evidence) if locate_check(e.check, checks) == line), None)
    if at is None:
        return (
            _("**Flower** · 判定第 {round} 轮").format(round=verdict.round)
            + "\n\n"
            + _("这一轮的判定没有这一条的记录。")
        )
    found = verdict.evidence[at]
    said = _(CHECK_WORDS[verdict.states()[at]])
    out = [_("**Flower** · 判定第 {round} 轮:**{status}**").format(round=verdict.round, status=said), ""]
    if found.basis.strip():
        out += [_("判定者的依据:{basis}").format(basis=found.basis.strip()), ""]
    out += backing(found, root)
    return "\n".join(out)


def _inside(uri: str, root: Path) -> bool:
    fs = to_fs_path(uri)
    return fs is not None and Path(fs).resolve().is_relative_to(root.resolve())


class EvidenceHover(Feature):
    """Hovers on 目标.md from the last verdict of each folder."""

    def __init__(self, server: FlowerServer) -> None:
        super().__init__(server)
        self.last: dict[str, LastVerdict] = {}  # folder URI -> its last verdict seen in a run

    def register(self) -> None:
        @self.server.feature(types.TEXT_DOCUMENT_HOVER, types.HoverOptions())
        async def hover(ls: FlowerServer, params: types.HoverParams) -> types.Hover | None:
            return await self.hover(params)

    async def on_run_start(self, run: Run) -> None:
        if not run.waking:
            self.last.pop(run.folder.uri, None)  # a fresh run: the last run's verdict judged another goal

    def on_event(self, run: Run, event: Event) -> None:
        if isinstance(event, VerdictGiven):
            last = LastVerdict.of_event(event, run.folder)
            if last is not None:
                self.last[run.folder.uri] = last

    async def hover(self, params: types.HoverParams) -> types.Hover | None:
        from flower.core.goal import check_lines

        uri = params.text_document.uri
        for folder in self.server.folders():
            verdict = self.last.get(folder.uri)
            if verdict is None:
                if not _inside(uri, folder.path):
                    continue
                try:
                    verdict = await asyncio.to_thread(last_on_disk, folder)
                except Exception:
                    log.warning("could not read the history of %s", folder.path, exc_info=True)
                    continue
            if verdict is None or not same_document(uri, verdict.goal):
                continue
            text = self.server.workspace.get_text_document(uri).source
            markdown = hover_markdown(verdict, params.position.line, check_lines(text), folder.path)
            if markdown is None:
                return None
            return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=markdown))
        return None
