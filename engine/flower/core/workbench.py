"""Workbench: the on-disk working directory (scripts / artifacts / notes) plus its index.

The index is injected into the system prompt, so the agent knows every turn what it already
has on disk; disk and system prompt both survive compaction, the conversation does not.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from pathlib import Path

from ..base.files import atomic_write

DESC_LINES = 8
DESC_CHARS = 100
# How far the fallback (first comment / docstring) looks; deeper comments describe code, not the file.
FALLBACK_LINES = 40
HEAD_BYTES = 16 * 1024

_COMMENT = re.compile(r"^\s*(#+|//+|--+)\s?(.*)$")
_DESC = re.compile(r"^\s*(?:#+|//+|--+)\s*desc\s*:\s*(.*)$", re.IGNORECASE)
_DOCSTRING = re.compile(r'^\s*[rRuUbB]?("""|\'\'\')(.*)$')

# (attribute, heading text) in display order
_SECTIONS = (
    ("scripts", "要跑第二次的脚本"),
    ("artifacts", "长产出(超过 2000 字符)"),
    ("notes", "关键决策,一个决策一个文件"),
)


@dataclass
class Workbench:
    workspace: Path
    dirname: str = ".flower"
    max_index_entries: int = 40
    home: Path | None = None

    def __post_init__(self) -> None:
        self.workspace = Path(self.workspace).expanduser().resolve()
        if self.home is not None:
            self.home = Path(self.home).expanduser().resolve()

    # -- layout -------------------------------------------------------------------------------

    @property
    def root(self) -> Path:
        return self.home if self.home is not None else self.workspace / self.dirname

    @property
    def external(self) -> bool:
        return not self.root.is_relative_to(self.workspace)

    @property
    def scripts(self) -> Path:
        return self.root / "scripts"

    @property
    def artifacts(self) -> Path:
        return self.root / "artifacts"

    @property
    def notes(self) -> Path:
        return self.root / "notes"

    @property
    def index_path(self) -> Path:
        return self.root / "INDEX.md"

    def show(self, p: Path) -> str:
        """Path as the model should see it: relative inside the workspace, absolute outside."""
        p = Path(p).expanduser()
        if not p.is_absolute():
            p = self.workspace / p
        p = p.resolve()
        if p.is_relative_to(self.workspace):
            return p.relative_to(self.workspace).as_posix()
        return str(p)

    def ensure(self) -> Workbench:
        for d in (self.scripts, self.artifacts, self.notes):
            d.mkdir(parents=True, exist_ok=True)
        return self

    # -- index --------------------------------------------------------------------------------

    def scan(self, d: Path) -> list[tuple[str, str, int]]:
        """(display path, one-line description, size in bytes) for every file under `d`."""
        d = Path(d)
        if not d.is_dir():
            return []
        out: list[tuple[str, str, int]] = []
        for p in sorted(d.rglob("*")):
            rel = p.relative_to(d)
            if any(part.startswith(".") for part in rel.parts):
                continue
            try:
                if not p.is_file():
                    continue
                size = p.stat().st_size
            except OSError:
                continue
            out.append((self.show(p), describe(p), size))
        return out

    def refresh(self) -> str:
        """Rewrite INDEX.md (every file, no cap) and return its content; an index the disk
        refuses leaves the old one and still returns the content (a hook may read it meanwhile,
        and an unwritable index must not break the run)."""
        with contextlib.suppress(OSError):
            return self.write_index()
        return self.index()

    def write_index(self) -> str:
        """Rewrite INDEX.md and return its content; DiskFault (or OSError) if it cannot be written."""
        content = self.index()
        atomic_write(self.index_path, content)
        return content

    def index(self) -> str:
        """What INDEX.md says now (every file, no cap)."""
        lines = [
            "# 工作台索引",
            "",
            f"> 自动生成,不要手改。位置:`{self.show(self.root)}/`",
        ]
        for attr, heading in _SECTIONS:
            entries = self.scan(getattr(self, attr))
            lines += ["", f"## {attr}/ —— {heading}({len(entries)} 个)", ""]
            if not entries:
                lines.append("(空)")
            for path, desc, size in entries:
                lines.append(_entry(path, desc, size))
        return "\n".join(lines) + "\n"

    def prompt_block(self) -> str:
        """The part injected into the system prompt. Kept short: it is resident every turn."""
        where = self.show(self.root)
        lines = [
            "## 工作台",
            f"工作台在 `{where}/`,索引是 `{self.show(self.index_path)}`。",
        ]
        if self.external:
            lines.append(f"工作台在工作区之外,用绝对路径访问它(`{self.root}/`),不要用相对路径。")
        lines += [
            "规矩:",
            f"1. 要跑第二次的脚本写进 `{self.show(self.scripts)}/`,首行写 `# desc: 一句话说明`。",
            f"2. 超过 2000 字符的产出写进 `{self.show(self.artifacts)}/`,对话里只给路径和结论。",
            f"3. 关键决策写进 `{self.show(self.notes)}/`,一个决策一个文件。",
        ]
        for attr, _heading in _SECTIONS:
            entries = self.scan(getattr(self, attr))
            if not entries:
                continue
            lines.append(f"现有 {attr}/({len(entries)} 个):")
            cap = max(self.max_index_entries, 0)
            for path, desc, _size in entries[:cap]:
                lines.append(f"- `{path}`" + (f" —— {desc}" if desc else ""))
            if len(entries) > cap:
                lines.append(f"- …另有 {len(entries) - cap} 个")
        return "\n".join(lines)


def describe(p: Path) -> str:
    """One-line description of a file: `# desc:` in the first 8 lines, else first comment/docstring."""
    try:
        with open(p, "rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError:
        return ""
    if b"\0" in head:  # binary file: no comments to read
        return ""
    lines = head.decode("utf-8", errors="replace").splitlines()
    for line in lines[:DESC_LINES]:
        m = _DESC.match(line)
        if m and m.group(1).strip():
            return _cut(m.group(1))
    return _fallback(lines[:FALLBACK_LINES])


def _fallback(lines: list[str]) -> str:
    for i, line in enumerate(lines):
        if i == 0 and line.startswith("#!"):
            continue
        doc = _DOCSTRING.match(line)
        if doc:
            quote, rest = doc.group(1), doc.group(2)
            rest = rest.split(quote)[0].strip()
            if rest:
                return _cut(rest)
            for nxt in lines[i + 1 :]:
                if quote in nxt:
                    nxt = nxt.split(quote)[0]
                    return _cut(nxt) if nxt.strip() else ""
                if nxt.strip():
                    return _cut(nxt)
            return ""
        m = _COMMENT.match(line)
        if m:
            text = m.group(2).strip()
            if not text or _is_pragma(text):
                continue
            return _cut(text)
    return ""


def _is_pragma(text: str) -> bool:
    # Encoding cookies and editor modelines say nothing about what the file is for.
    low = text.lower()
    return low.startswith(("-*-", "vim:")) or "coding:" in low or "coding=" in low


def _cut(text: str) -> str:
    return " ".join(text.split())[:DESC_CHARS]


def _entry(path: str, desc: str, size: int) -> str:
    return f"- `{path}`" + (f" —— {desc}" if desc else "") + f"({_size(size)})"


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / 1024 / 1024:.1f} MB"
