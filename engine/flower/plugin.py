"""Where the Claude Code plugin that every flower session mounts lives."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def plugin_dir() -> Path | None:
    """The plugin folder: inside an installed wheel, else the checkout's ``plugin/``.

    None when neither exists (a broken install); sessions then run without the plugin.
    """
    for candidate in (_PACKAGE / "_plugin", _PACKAGE.parent.parent / "plugin"):
        if (candidate / ".claude-plugin" / "plugin.json").is_file():
            return candidate
    return None
