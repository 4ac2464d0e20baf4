"""Verdicts as diagnostics on 目标.md, and the code actions of an unreachable verdict.

After each judge round: one diagnostic per failed check, on the line of that check (not_yet ->
Warning, unreachable -> Error, no conclusion -> Warning); achieved clears them. Each carries the
judge's evidence for that check as related information: the file and lines it read, the command
it ran with its exit code; a check claimed achieved without evidence says so. Checks marked
[此环境无法验证:…] are shown as Information as soon as the goal is set. On an unreachable verdict
the code actions offer the three choices of the engine's question; choosing one answers it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from flower.base.i18n import _
from flower.core.events import Event, GoalUnverifiable, VerdictGiven
from flower.core.goal import locate_check

from . import protocol as p
from . import wire
from .common import Folder
from .documents import same_document, uri_of
from .host import Feature, FlowerServer
from .last_verdict import LastVerdict, last_on_disk

if TYPE_CHECKING:
    from flower.core.evidence import Evidence
    from flower.core.human import Ask

    from .run import Run, RunEnded

log = logging.getLogger(__name__)

SOURCE = "flower"
SEVERITY = {
    "not_yet": types.DiagnosticSeverity.Warning,
    "unreachable": types.DiagnosticSeverity.Error,
    "": types.DiagnosticSeverity.Warning,
}


@dataclass
class Published:
    """What this server has published on one folder's 目标.md."""

    path: Path | None = None
    verdict: list[types.Diagnostic] = field(default_factory=list)
    unverifiable: list[types.Diagnostic] = field(default_factory=list)


def _heading_line(lines: list[str], checks: list[tuple[int, str]]) -> int:
    for i, line in enumerate(lines):
        if line.lstrip().startswith("#") and "判定清单" in line:
            return i
    return checks[0][0] if checks else 0


def _line_range(lines: list[str], n: int, encoding: str) -> types.Range:
    text = lines[n] if 0 <= n < len(lines) else ""
    if encoding == types.PositionEncodingKind.Utf8:
        end = len(text.encode("utf-8"))
    elif encoding == types.PositionEncodingKind.Utf32:
        end = len(text)
    else:
        end = len(text.encode("utf-16-le")) // 2
    return types.Range(start=types.Position(line=n, character=0), end=types.Position(line=n, character=end))


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


EXCERPT_SHOWN = 160  # the longest excerpt of a command's output in a diagnostic's related information


def short_excerpt(text: str, limit: int = EXCERPT_SHOWN) -> str:
    """A command's output in one line for a person, bounded."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def workspace_file(root: Path | None, name: str) -> Path | None:
    """`name` (as the judge's trail records it: relative to the workspace, or absolute) as a
    file inside the workspace `root`; None when it is outside it or not there."""
    if root is None or not name.strip():
        return None
    try:
        base = root.resolve()
        path = Path(name).expanduser()
        path = (path if path.is_absolute() else base / path).resolve()
        path.relative_to(base)
    except (OSError, ValueError):
        return None
    return path if path.is_file() else None


def _named_file(root: Path | None, command: str) -> Path | None:
    """The first file of the workspace a command names (`python3 hello.py` -> hello.py)."""
    for word in command.split():
        found = workspace_file(root, word.strip("'\"<>|;&()"))
        if found is not None:
            return found
    return None


def _lines_of(start: int | None, end: int | None) -> types.Range:
    first = max(0, (start or 1) - 1)
    last = max(first, (end or start or 1) - 1)
    return types.Range(
        start=types.Position(line=first, character=0), end=types.Position(line=last, character=0)
    )


def related(
    evidence: Evidence, *, root: Path | None, goal: Path | None, goal_range: types.Range
) -> list[types.DiagnosticRelatedInformation]:
    """The evidence of one check as related information: where the judge looked, what it ran."""
    from flower.core.evidence import describe

    here = types.Location(uri=uri_of(goal), range=goal_range) if goal is not None else None
    if evidence.kind == "read" and evidence.backed:
        path = workspace_file(root, evidence.path)
        if path is None:
            return []
        if evidence.line is not None and evidence.end_line is not None:
            message = _("判定者读了第 {line}-{end} 行").format(line=evidence.line, end=evidence.end_line)
        elif evidence.line is not None:
            message = _("判定者读了第 {line} 行起").format(line=evidence.line)
        else:
            message = _("判定者读了这个文件")
        where = types.Location(uri=uri_of(path), range=_lines_of(evidence.line, evidence.end_line))
        return [types.DiagnosticRelatedInformation(location=where, message=message)]
    if evidence.kind == "command" and evidence.backed:
        named = _named_file(root, evidence.command)
        at = types.Location(uri=uri_of(named), range=_lines_of(1, 1)) if named is not None else here
        if at is None:
            return []
        code = "?" if evidence.exit_code is None else str(evidence.exit_code)
        message = _("判定者跑了 `{command}` → 退出码 {code}").format(command=evidence.command, code=code)
        if evidence.excerpt.strip():
            message += _(":{excerpt}").format(excerpt=short_excerpt(evidence.excerpt))
        return [types.DiagnosticRelatedInformation(location=at, message=message)]
    if evidence.kind in ("unverifiable", "none") or here is None:
        return []  # unverifiable: its own diagnostic says so; none: the message says no evidence
    return [types.DiagnosticRelatedInformation(location=here, message=describe(evidence))]


def verdict_diagnostics(
    verdict: p.VerdictInfo,
    markdown: str,
    *,
    folder: str,
    encoding: str = "utf-16",
    evidence: Sequence[Evidence] = (),
    unproven: Sequence[str] = (),
    root: Path | None = None,
    goal: Path | None = None,
) -> list[types.Diagnostic]:
    """One diagnostic per failed check of a verdict that is not achieved, with the judge's
    evidence for it (`evidence`, files resolved against the workspace `root`) as related
    information; a check in `unproven` (claimed achieved without evidence) says so."""
    from flower.core.goal import check_lines

    if verdict.state == "achieved":
        return []
    lines = markdown.splitlines()
    checks = check_lines(markdown)
    severity = SEVERITY.get(verdict.state, types.DiagnosticSeverity.Warning)
    label = {
        "not_yet": _("未通过"),
        "unreachable": _("无法达成"),
        "": _("未通过(没有明确结论)"),
    }[verdict.state]
    reason = _("\n判定者:{reason}").format(reason=verdict.reason.strip()) if verdict.reason.strip() else ""
    data = {"folder": folder, "state": verdict.state, "round": verdict.round}
    by_line: dict[int, Evidence] = {}
    for e in evidence:
        found_at = locate_check(e.check, checks)
        if found_at is not None:
            by_line.setdefault(found_at, e)
    unproven_lines = {locate_check(u, checks) for u in unproven} - {None}
    out = []
    for item in verdict.failed or [""]:
        line = locate_check(item, checks) if item else None
        where = line if line is not None else _heading_line(lines, checks)
        what = item or _("目标")
        suffix = "" if line is not None or not item else _("(判定清单里找不到)")
        bare = item in unproven or (line is not None and line in unproven_lines)
        said = _("没有证据") if bare else label
        found = by_line.get(line) if line is not None else None
        at = _line_range(lines, where, encoding)
        info = related(found, root=root, goal=goal, goal_range=at) if found is not None else []
        if bare and found is not None and found.kind == "none":
            suffix += _("(判定者说通过了,可没跑命令、没读文件)")
        out.append(
            types.Diagnostic(
                range=at,
                message=_("判定第 {round} 轮,{label}:{what}{suffix}{reason}").format(
                    round=verdict.round, label=said, what=what, suffix=suffix, reason=reason
                ),
                severity=severity,
                code=verdict.state or "unclear",
                source=SOURCE,
                data=data,
                related_information=info or None,
            )
        )
    return out


def unverifiable_diagnostics(
    items: list[str] | None, markdown: str, *, encoding: str = "utf-16"
) -> list[types.Diagnostic]:
    """Information on every [此环境无法验证:…] check, known to fail here from the moment the goal is set."""
    from flower.core.goal import Goal, check_lines

    lines = markdown.splitlines()
    checks = check_lines(markdown)
    wanted = items if items else Goal.parse(markdown).unverifiable
    out = []
    for item in wanted:
        line = locate_check(item, checks)
        if line is None:
            continue
        out.append(
            types.Diagnostic(
                range=_line_range(lines, line, encoding),
                message=_("这一条在这个环境里验证不了,所以在这里通不过:{item}").format(item=item),
                severity=types.DiagnosticSeverity.Information,
                code="unverifiable",
                source=SOURCE,
            )
        )
    return out


class VerdictDiagnostics(Feature):
    """Per-folder published diagnostics (the union of verdict + unverifiable ones), and the code
    actions of an unreachable verdict while its run waits for the answer."""

    def __init__(self, server: FlowerServer) -> None:
        super().__init__(server)
        self.published: dict[str, Published] = {}
        self.runs: dict[str, Run] = {}  # folder URI -> the run in progress there

    def register(self) -> None:
        @self.server.feature(
            types.TEXT_DOCUMENT_CODE_ACTION,
            types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
        )
        def code_action(ls: FlowerServer, params: types.CodeActionParams) -> list[types.CodeAction]:
            return self.actions(params)

    async def on_run_start(self, run: Run) -> None:
        self.runs[run.folder.uri] = run
        if not run.waking:
            self.clear(run.folder)  # a fresh run: the last run's goal (maybe archived) is gone

    async def on_initialized(self) -> None:
        self.server.spawn(self._restore())

    async def _restore(self) -> None:
        """The marks of each folder's last verdict on disk, so an editor opened on a folder
        whose run ended short of its goal shows where, as the hover does (off the loop: the
        history reads the run files)."""
        for folder in self.server.folders():
            try:
                last = await asyncio.to_thread(last_on_disk, folder)
            except Exception:
                log.warning("could not read the history of %s", folder.path, exc_info=True)
                continue
            if last is None or folder.uri in self.published or folder.uri in self.runs:
                continue  # nothing judged yet, or a run of this session has spoken since
            self.show(folder, last)

    def on_event(self, run: Run, event: Event) -> None:
        if isinstance(event, VerdictGiven):
            last = LastVerdict.of_event(event, run.folder)
            if last is not None:
                self.show(run.folder, last)
        elif isinstance(event, GoalUnverifiable):
            self.on_goal_set(run, event)

    def on_run_end(self, run: Run, ended: RunEnded) -> None:
        if self.runs.get(run.folder.uri) is run:
            del self.runs[run.folder.uri]

    def _encoding(self) -> str:
        try:
            return str(self.server.workspace.position_encoding or "utf-16")
        except RuntimeError:
            return "utf-16"

    def _goal_path(self, folder: Folder, raw: str) -> Path | None:
        if not raw:
            return None
        path = Path(raw).expanduser()
        return path if path.is_absolute() else folder.path / path

    def _publish(self, pub: Published) -> None:
        if pub.path is None:
            return
        self.server.client.send(
            types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS,
            types.PublishDiagnosticsParams(
                uri=uri_of(pub.path), diagnostics=[*pub.verdict, *pub.unverifiable]
            ),
        )

    def _switch(self, folder: Folder, path: Path) -> Published:
        pub = self.published.setdefault(folder.uri, Published())
        if pub.path is not None and pub.path.resolve() != path.resolve():
            self.clear(folder)  # a goal file elsewhere: nothing may linger on the old one
            pub = self.published.setdefault(folder.uri, Published())
        pub.path = path
        return pub

    def clear(self, folder: Folder) -> None:
        pub = self.published.pop(folder.uri, None)
        if pub is not None and pub.path is not None:
            pub.verdict, pub.unverifiable = [], []
            self._publish(pub)

    def show(self, folder: Folder, verdict: LastVerdict) -> None:
        """Publish `verdict`'s marks on its 目标.md (none when it is achieved)."""
        pub = self._switch(folder, verdict.goal)
        pub.verdict = verdict_diagnostics(
            verdict.info(),
            _read(verdict.goal),
            folder=folder.uri,
            encoding=self._encoding(),
            evidence=verdict.evidence,
            unproven=verdict.unproven,
            root=folder.path,
            goal=verdict.goal,
        )
        self._publish(pub)

    def on_goal_set(self, run: Run, event: GoalUnverifiable) -> None:
        path = self._goal_path(run.folder, event.path)
        if path is None:
            return
        pub = self._switch(run.folder, path)
        pub.verdict = []  # a new goal: the last verdict's lines no longer mean anything
        pub.unverifiable = unverifiable_diagnostics(
            event.unverifiable, _read(path), encoding=self._encoding()
        )
        self._publish(pub)

    # -- code actions ------------------------------------------------------------------------
    def actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        for uri, run in list(self.runs.items()):
            pub = self.published.get(uri)
            if pub is None or pub.path is None or not same_document(params.text_document.uri, pub.path):
                continue
            ask = unreachable_ask(run)
            if ask is None:
                continue
            diagnostics = [
                d for d in pub.verdict if d.code == "unreachable" and _overlaps(d.range, params.range)
            ]
            diagnostics += [
                d
                for d in params.context.diagnostics
                if d.source == SOURCE and d.code == "unreachable" and d not in diagnostics
            ]
            if not diagnostics:
                continue
            return [
                types.CodeAction(
                    title=f"Flower: {option}",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=diagnostics,
                    is_preferred=i == 0,
                    command=types.Command(
                        title=option,
                        command=p.ANSWER,
                        arguments=[wire.to_json(p.AnswerArgs(id=ask.id, text=option, folder=run.folder.uri))],
                    ),
                )
                for i, option in enumerate(ask.options)
            ]
        return []


def unreachable_ask(run: Run) -> Ask | None:
    """The engine's pending "unreachable: what now?" question, recognised by its first option."""
    from flower.workflow.goal import ACCEPT

    try:
        pending = run.channel.pending()
    except Exception:
        return None
    for ask in pending:
        if ACCEPT in ask.options:
            return ask
    return None


def _overlaps(a: types.Range, b: types.Range) -> bool:
    return (a.start.line, a.start.character) <= (b.end.line, b.end.character) and (
        b.start.line,
        b.start.character,
    ) <= (a.end.line, a.end.character)
