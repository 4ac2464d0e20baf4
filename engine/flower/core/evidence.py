"""The judge's evidence: what it actually did in its turn (the trail), and per check what backs it.

While the judge of a round works, flower records every tool call of its turn from the events the
Runtime already emits (`TrailRecorder`): the command with its exit code and an excerpt of its
output, the files read with their line ranges, the searches with their hits. That is the
`Trail`. The verdict's optional fourth section (``## 证据``) says, one line per checklist item,
how the judge verified it; `link` ties each line to the recorded call it names. A line naming a
command the judge never ran, or a file it never read, is unbacked (`Evidence.backed` False).

Every value here is typed, frozen and JSON-round-trippable (`to_json` / `from_json`), with
defaults, so a caller (the history, the language server, an editor) can build a partial one.
No excerpt ever carries a credential: what is recorded is passed through `secrets.redact`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Literal, TypedDict, TypeGuard, get_args

from ..base import loose
from ..base.i18n import N_
from ..base.secrets import redact

__all__ = [
    "CHECK_MARKS",
    "CHECK_WORDS",
    "EVIDENCE_ENV",
    "EXCERPT_CHARS",
    "POLICIES",
    "CheckState",
    "Evidence",
    "EvidenceKind",
    "EvidencePolicy",
    "Trail",
    "TrailCall",
    "TrailRecorder",
    "check_line",
    "describe",
    "evidence_policy",
    "link",
    "unbacked",
]

EvidenceKind = Literal["command", "read", "search", "unverifiable", "none"]
_KINDS: tuple[str, ...] = get_args(EvidenceKind)
# how a verdict judged one check, the one rule every front end shows (flower.core.goal.check_states)
CheckState = Literal["passed", "failed", "no_evidence", "unverifiable"]
EXCERPT_CHARS = 300  # the longest excerpt of a call's output kept (the head, then "…")
_SUMMARY_CHARS = 200
SEARCH_TOOLS = ("Grep", "Glob")
READ_TOOLS = ("Read", "NotebookRead")
RUN_TOOLS = ("Bash",)
# the CLI's Bash result for a command that exited non-zero: "Exit code 2\n<output>"
_EXIT = re.compile(r"^\s*(?:Error:\s*)?Exit code (\d+)", re.IGNORECASE)
_UNVERIFIABLE = re.compile(r"[\[\u3010]?\s*此环境无法验证")
_SPAN = re.compile(r"`([^`\n]+)`")
_PATH = re.compile(r"(?<![\w/.-])((?:[\w.\-]+/)*[\w\-]+\.[A-Za-z0-9]{1,8}|(?:[\w.\-]+/)+[\w.\-]+)(?![\w/-])")
_NUMBERED = re.compile(r"^\s*(?:第\s*)?(\d{1,3})\s*(?:条)?\s*[.、)\uff09:\uff1a]\s*")
_MARK = re.compile(r"^\s*(?:[-*+\u2022]\s+|\(\d{1,3}\)\s*|\uff08\d{1,3}\uff09\s*)?(?:\[[ xX\u2713]?\]\s*)?")
_SEPARATORS = re.compile(r"\s+(?:—{1,2}|--|=>|->|→)\s+|——|\s*[:\uff1a]\s+|\uff1a")


def _excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """The head of a tool's output, scrubbed of credentials, bounded to `limit` characters."""
    clean = redact(text or "").strip()
    return clean if len(clean) <= limit else clean[: limit - 1].rstrip() + "…"


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _is_kind(value: object) -> TypeGuard[EvidenceKind]:
    return value in _KINDS


@dataclass(frozen=True)
class Evidence:
    """How one checklist item was verified, as flower linked it to the judge's recorded calls.

    ``check``: the checklist item; ``kind``: ``command`` (a Bash command ran), ``read`` (a file
    was read), ``search`` (a Grep/Glob), ``unverifiable`` (marked ``[此环境无法验证:…]``: never
    met) or ``none`` (nothing cited). ``command``/``exit_code``/``excerpt``: the command's, for
    ``command`` (the excerpt is a bounded, scrubbed head of its output); ``path``/``line``/
    ``end_line``: the file and first/last line read, for ``read`` (``path`` is the searched
    folder for ``search``); ``pattern``/``hits``: a search's. ``backed``: linked to a call the
    judge really made in its turn; ``basis``: the judge's own words for it."""

    check: str = ""
    kind: EvidenceKind = "none"
    command: str = ""
    exit_code: int | None = None
    excerpt: str = ""
    path: str = ""
    line: int | None = None
    end_line: int | None = None
    pattern: str = ""
    hits: int | None = None
    backed: bool = False
    basis: str = ""

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: object) -> Evidence:
        """A value from `to_json`'s shape; unknown keys and ill-typed values fall back to defaults."""
        d = _fields_of(data)
        kind = d.get("kind")
        return cls(
            check=loose.text(d.get("check")),
            kind=kind if _is_kind(kind) else "none",
            **_common(d),
            backed=loose.flag(d.get("backed")),
            basis=loose.text(d.get("basis")),
        )


@dataclass(frozen=True)
class TrailCall:
    """One tool call of the judge's turn with what came back.

    ``tool``: its name; ``summary``: what the call was about (bounded); ``command``/
    ``exit_code``: a Bash call's (None when it never ran: refused, or no result came);
    ``excerpt``: the head of the output, scrubbed and bounded; ``path``/``line``/``end_line``:
    the file a Read looked at and the lines it got (the folder a search looked in);
    ``pattern``/``hits``: a Grep's or Glob's pattern and how many hits it reported; ``ran``:
    whether the tool really ran (False for a refused or unanswered call)."""

    tool: str = ""
    summary: str = ""
    command: str = ""
    exit_code: int | None = None
    excerpt: str = ""
    path: str = ""
    line: int | None = None
    end_line: int | None = None
    pattern: str = ""
    hits: int | None = None
    ran: bool = False

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: object) -> TrailCall:
        """A value from `to_json`'s shape; unknown keys and ill-typed values fall back to defaults."""
        d = _fields_of(data)
        return cls(
            tool=loose.text(d.get("tool")),
            summary=loose.text(d.get("summary")),
            **_common(d),
            ran=loose.flag(d.get("ran")),
        )


@dataclass(frozen=True)
class Trail:
    """The recorded tool calls of one judge turn, in the order they were made."""

    calls: tuple[TrailCall, ...] = ()

    def to_json(self) -> list[dict[str, object]]:
        return [c.to_json() for c in self.calls]

    @classmethod
    def from_json(cls, data: object) -> Trail:
        if not isinstance(data, list):
            return cls()
        return cls(tuple(TrailCall.from_json(c) for c in data if isinstance(c, dict)))

    @property
    def ran(self) -> list[TrailCall]:
        """The calls that really ran."""
        return [c for c in self.calls if c.ran]


class _Common(TypedDict):
    """The fields an Evidence and a TrailCall share."""

    command: str
    exit_code: int | None
    excerpt: str
    path: str
    line: int | None
    end_line: int | None
    pattern: str
    hits: int | None


def _common(d: dict[str, object]) -> _Common:
    return {
        "command": loose.text(d.get("command")),
        "exit_code": _int_or_none(d.get("exit_code")),
        "excerpt": loose.text(d.get("excerpt")),
        "path": loose.text(d.get("path")),
        "line": _int_or_none(d.get("line")),
        "end_line": _int_or_none(d.get("end_line")),
        "pattern": loose.text(d.get("pattern")),
        "hits": _int_or_none(d.get("hits")),
    }


def _fields_of(data: object) -> dict[str, object]:
    # a field keeps a value only of the type it is declared with (str, bool, int | None):
    # anything else gives its default, which is what loose's readers give
    return loose.mapping(data) if isinstance(data, dict) else {}


class TrailRecorder:
    """Feed it the events of the judge's turn (`observe`); `trail()` is what it did.

    Only the main thread's calls count (a subagent's are not the judge's own looking). Event
    objects are read by their fields, so this module needs nothing of the event types."""

    def __init__(self, workspace: str | Path | None = None) -> None:
        self._root = str(Path(workspace).resolve()) if workspace is not None else ""
        self._order: list[str] = []
        self._calls: dict[str, TrailCall] = {}

    def observe(self, event: object) -> None:
        kind = getattr(event, "kind", "")
        if getattr(event, "subagent", False):
            return
        if kind == "tool_call":
            call_id = str(getattr(event, "id", "") or len(self._order))
            self._order.append(call_id)
            self._calls[call_id] = self._called(str(getattr(event, "tool", "")), getattr(event, "input", {}))
        elif kind == "tool_result":
            call_id = str(getattr(event, "tool_use_id", ""))
            call = self._calls.get(call_id)
            if call is not None:
                self._calls[call_id] = self._answered(call, event)

    def trail(self) -> Trail:
        return Trail(tuple(self._calls[i] for i in self._order))

    def _rel(self, path: str) -> str:
        if self._root and path.startswith(self._root + "/"):
            return path[len(self._root) + 1 :]
        return path

    def _called(self, tool: str, given: object) -> TrailCall:
        data = _fields_of(given)
        command = loose.text(data.get("command"))
        path = loose.text(data.get("file_path") or data.get("notebook_path") or data.get("path"))
        pattern = loose.text(data.get("pattern"))
        offset = _int_or_none(data.get("offset"))
        summary = command or path or pattern or json.dumps(data, ensure_ascii=False, default=str)
        return TrailCall(
            tool=tool,
            summary=redact(" ".join(summary.split()))[:_SUMMARY_CHARS],
            command=redact(command),
            path=self._rel(path),
            line=offset if tool in READ_TOOLS else None,
            pattern=redact(pattern),
        )

    def _answered(self, call: TrailCall, event: object) -> TrailCall:
        text = _result_text(event)
        error = bool(getattr(event, "is_error", False))
        structured = _structured(event)
        exit_code: int | None = None
        ran = not error
        if call.tool in RUN_TOOLS:
            hit = _EXIT.match(text)
            if hit:
                exit_code, ran = int(hit.group(1)), True
                text = text[hit.end() :]
            elif not error:
                exit_code = 0
        line, end, hits = call.line, None, None
        if call.tool in READ_TOOLS and ran:
            got = structured.get("file")
            file = _fields_of(got)
            start = _int_or_none(file.get("startLine")) or call.line or 1
            count = _int_or_none(file.get("numLines"))
            if count is None:
                count = len(re.findall(r"^\s*\d+\u2192", text, re.M)) or None
            line, end = start, (start + count - 1 if count else None)
        if call.tool in SEARCH_TOOLS and ran:
            hits = _int_or_none(structured.get("numFiles"))
            if hits is None:
                hits = _int_or_none(structured.get("numMatches"))
            if hits is None:
                hits = len([ln for ln in text.splitlines() if ln.strip() and not ln.startswith("Found ")])
        return TrailCall(
            tool=call.tool,
            summary=call.summary,
            command=call.command,
            exit_code=exit_code,
            excerpt=_excerpt(text),
            path=call.path,
            line=line,
            end_line=end,
            pattern=call.pattern,
            hits=hits,
            ran=ran,
        )


def _result_text(event: object) -> str:
    """The whole text of a tool result: the event's own head, else the raw message's block."""
    raw = getattr(event, "raw", None)
    wanted = getattr(event, "tool_use_id", "")
    for block in getattr(raw, "content", None) or []:
        if getattr(block, "tool_use_id", None) != wanted:
            continue
        content = getattr(block, "content", None)
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(getattr(event, "text", "") or "")


def _structured(event: object) -> dict[str, object]:
    """The CLI's structured result of the call (the SDK's ``tool_use_result``), when it is one call's."""
    raw = getattr(event, "raw", None)
    return _fields_of(getattr(raw, "tool_use_result", None))


# -- linking the verdict's evidence lines to the trail ---------------------------------------------


def _norm(text: str) -> str:
    return " ".join(text.replace("`", " ").split()).lower()


def _key(text: str) -> str:
    return re.sub(r"[\s`'\"\u201c\u201d\u2018\u2019,\uff0c\u3002.;\uff1b]+", "", text).lower()


def _assign(checks: Sequence[str], lines: Sequence[str]) -> dict[int, str]:
    """Which check each evidence line is about: by its number, by naming the check, else by order."""
    out: dict[int, str] = {}
    keys = [_key(c) for c in checks]
    unnamed: list[str] = []
    for raw in lines:
        text = _MARK.sub("", raw, count=1).strip()
        if not text:
            continue
        numbered = _NUMBERED.match(text)
        if numbered and 1 <= int(numbered.group(1)) <= len(checks):
            index, basis = int(numbered.group(1)) - 1, text[numbered.end() :]
            head, rest = _split(basis)
            if rest and _key(head) and _key(head) in keys[index]:
                basis = rest  # "1. <check> — <basis>"
            out.setdefault(index, basis.strip())
            continue
        head, rest = _split(text)
        named = _named(keys, head) if rest else None
        if named is None:
            named = _named(keys, text, inside=True)
            if named is not None:
                rest = text.replace(checks[named], "", 1).strip(" —-:\uff1a") or text
        if named is not None and named not in out:
            out[named] = (rest or text).strip()
        else:
            unnamed.append(text)
    free = [i for i in range(len(checks)) if i not in out]
    for index, text in zip(free, unnamed, strict=False):
        out[index] = text  # by order: the judge wrote one line per check as asked
    return out


def _split(text: str) -> tuple[str, str]:
    hit = _SEPARATORS.search(text)
    if hit is None:
        return text, ""
    return text[: hit.start()], text[hit.end() :]


def _named(keys: Sequence[str], text: str, *, inside: bool = False) -> int | None:
    k = _key(text)
    if not k:
        return None
    best: tuple[int, int] | None = None
    for i, check in enumerate(keys):
        if not check:
            continue
        matched = check in k if inside else (k == check or k in check or check in k)
        if matched and (best is None or len(check) > best[1]):
            best = (i, len(check))
    return best[0] if best else None


def _is_command(span: str) -> bool:
    return bool(re.search(r"\s", span.strip())) or not _PATH.fullmatch(span.strip())


def _same_path(cited: str, recorded: str) -> bool:
    cited, recorded = cited.strip("./"), recorded.strip("./")
    if not cited or not recorded:
        return False
    return cited == recorded or recorded.endswith("/" + cited) or cited.endswith("/" + recorded)


def _from_call(check: str, basis: str, call: TrailCall) -> Evidence:
    if call.tool in RUN_TOOLS:
        return Evidence(
            check=check,
            kind="command",
            command=call.command,
            exit_code=call.exit_code,
            excerpt=call.excerpt,
            backed=True,
            basis=basis,
        )
    if call.tool in SEARCH_TOOLS:
        return Evidence(
            check=check,
            kind="search",
            path=call.path,
            pattern=call.pattern,
            hits=call.hits,
            excerpt=call.excerpt,
            backed=True,
            basis=basis,
        )
    return Evidence(
        check=check,
        kind="read",
        path=call.path,
        line=call.line,
        end_line=call.end_line,
        excerpt=call.excerpt,
        backed=True,
        basis=basis,
    )


def _names_command(command: str, flat: str, spans: list[str]) -> int:
    """Where the line names this command (-1: it does not): a quoted command must be part of it
    (the judge may quote the one command of a `cd x && ...`), an unquoted one must be said
    whole, with no more options after it."""
    if spans:
        return min((flat.find(s) for s in spans if len(s) >= 3 and s in command), default=-1)
    at = flat.find(command)
    while at >= 0:
        rest = flat[at + len(command) :]
        if not re.match(r"\s*-|[\w./]", rest):
            return at
        at = flat.find(command, at + 1)
    return -1


def _basis_evidence(check: str, basis: str, trail: Trail) -> Evidence:
    """The evidence a line's basis gives: what it names first among the calls that ran; else what
    it claims (unbacked); else nothing."""
    spans = [s.strip() for s in _SPAN.findall(basis) if len(s.strip()) >= 2]
    commands = [s for s in spans if _is_command(s)]
    flat = _norm(basis)
    # a file named in a quoted command is the command's, not a file it read
    bare = _SPAN.sub(lambda m: " " if _is_command(m.group(1)) else f" {m.group(1)} ", basis)
    paths = [m.group(1) for m in _PATH.finditer(bare)]
    named: list[tuple[int, int, TrailCall]] = []  # (where the line names it, order, the call)
    for order, call in enumerate(trail.ran):
        at = -1
        if call.tool in RUN_TOOLS and call.command.strip():
            at = _names_command(_norm(call.command), flat, [_norm(c) for c in commands])
        elif call.tool in READ_TOOLS:
            cited = [p for p in paths if _same_path(p, call.path)]
            at = min((flat.find(_norm(p)) for p in cited), default=-1)
        elif call.tool in SEARCH_TOOLS and call.pattern:
            at = flat.find(_norm(call.pattern)) if _norm(call.pattern) else -1
        if at >= 0:
            named.append((at, order, call))
    if named:
        return _from_call(check, basis, min(named, key=lambda n: (n[0], n[1]))[2])
    # cited but never done: unbacked, said as what it claims to be (the first thing it names)
    claims = [(flat.find(_norm(c)), "command", c) for c in commands]
    claims += [(flat.find(_norm(p)), "read", p) for p in paths]
    if claims:
        _, kind, what = min(claims, key=lambda c: c[0] if c[0] >= 0 else len(flat))
        if kind == "command":
            return Evidence(check=check, kind="command", command=what, basis=basis)
        return Evidence(check=check, kind="read", path=what, basis=basis)
    return Evidence(check=check, kind="none", basis=basis)


def link(
    checks: Sequence[str],
    lines: Sequence[str],
    trail: Trail,
    *,
    unverifiable: Iterable[str] = (),
) -> list[Evidence]:
    """One `Evidence` per check, in the checklist's order: each evidence line (the verdict's
    fourth section) tied to the recorded call it names. A check without a line, or whose line
    names nothing the judge did, is unbacked; a check marked ``[此环境无法验证:…]`` (in the
    goal, or in its line) is ``unverifiable``, never backed."""
    marked = set(unverifiable)
    assigned = _assign(checks, lines)
    out = []
    for index, check in enumerate(checks):
        basis = assigned.get(index, "")
        if check in marked or _UNVERIFIABLE.search(basis):
            out.append(Evidence(check=check, kind="unverifiable", basis=basis))
        elif not basis:
            out.append(Evidence(check=check))
        else:
            out.append(_basis_evidence(check, basis, trail))
    return out


def unbacked(evidence: Iterable[Evidence]) -> list[str]:
    """The checks the evidence does not back (unverifiable ones included: never met)."""
    return [e.check for e in evidence if not e.backed]


# keep the dataclass field lists in one place for readers of the JSON shape
EVIDENCE_FIELDS = tuple(f.name for f in fields(Evidence))
TRAIL_CALL_FIELDS = tuple(f.name for f in fields(TrailCall))


# -- the policy ------------------------------------------------------------------------------------

EvidencePolicy = Literal["strict", "relaxed"]
EVIDENCE_ENV = "FLOWER_EVIDENCE"
POLICIES: tuple[str, ...] = get_args(EvidencePolicy)


def evidence_policy(value: str | None = None) -> EvidencePolicy:
    """How an achieved verdict is taken: ``strict`` (the default) accepts it only when every
    check is backed by a call the judge made; ``relaxed`` takes the judge's word (a check marked
    ``[此环境无法验证:…]`` is still never met). `value`, else ``$FLOWER_EVIDENCE``, else strict;
    anything else is strict."""
    for chosen in (value, os.environ.get(EVIDENCE_ENV)):
        word = (chosen or "").strip().lower()
        if word == "relaxed":
            return "relaxed"
        if word == "strict":
            return "strict"
    return "strict"


# -- how a person reads it -------------------------------------------------------------------------

# a check's state in a word (the hover; the Flower view and Neovim say the same in their own texts)
CHECK_WORDS: dict[CheckState, str] = {
    "passed": N_("通过"),
    "failed": N_("未通过"),
    "no_evidence": N_("没有证据"),
    "unverifiable": N_("这个环境里验证不了"),
}
# a check's state as a mark before its line in the terminal
CHECK_MARKS: dict[CheckState, str] = {"passed": "✓", "failed": "✗", "no_evidence": "✗", "unverifiable": "?"}


def describe(evidence: Evidence) -> str:
    """What backs a check, in one line for a person: the command and its exit code, the file
    and its lines, the search and its hits; or why nothing does."""
    from ..base.i18n import _

    if evidence.kind == "unverifiable":
        return _("这个环境里验证不了,不算通过")
    if evidence.kind == "command":
        if not evidence.backed:
            return _("说跑了 `{command}`,可它没跑过").format(command=evidence.command)
        code = "?" if evidence.exit_code is None else str(evidence.exit_code)
        return _("跑了 `{command}`(退出码 {code})").format(command=evidence.command, code=code)
    if evidence.kind == "read":
        if not evidence.backed:
            return _("说看了 {path},可它没读过").format(path=evidence.path)
        if evidence.line is not None and evidence.end_line is not None:
            where = _("第 {line}-{end} 行").format(line=evidence.line, end=evidence.end_line)
            return _("读了 {path} {where}").format(path=evidence.path, where=where)
        return _("读了 {path}").format(path=evidence.path)
    if evidence.kind == "search":
        hits = "?" if evidence.hits is None else str(evidence.hits)
        return _("搜了 `{pattern}`({hits} 处)").format(pattern=evidence.pattern, hits=hits)
    return _("没有证据")


def check_line(evidence: Evidence, *, width: int = 160, state: CheckState | None = None) -> str:
    """One check with its basis, as the terminal prints it under a verdict, marked by its
    `state` (`flower.core.goal.check_states`): ``✓`` passed, ``✗`` failed or without
    evidence, ``?`` unverifiable; without a state, by whether the evidence is backed. Bounded to
    `width` characters (the check is cut first)."""
    if state is None:
        backed: CheckState = "passed" if evidence.backed else "no_evidence"
        state = "unverifiable" if evidence.kind == "unverifiable" else backed
    mark = CHECK_MARKS[state]
    basis = " ".join(describe(evidence).split())
    check = " ".join(evidence.check.split())
    room = max(8, width - len(basis) - 8)
    if len(check) > room:
        check = check[: room - 1] + "…"
    line = f"     {mark} {check} — {basis}"
    return line if len(line) <= width else line[: width - 1] + "…"
