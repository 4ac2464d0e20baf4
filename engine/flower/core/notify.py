"""Delivering notices: the terminal's bell and title, and the user's notify command (the CLI's
`--notify` / $FLOWER_NOTIFY, the editor's `flower.notify`: one runner for every front end).

The command is the setting split as a shell would split words (shlex.split), then run without a
shell: the notice goes to its stdin as one JSON object. It runs on its own thread, bounded in
time; its failure is one warning line and never touches the run.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import threading
from collections.abc import Callable, Mapping

from ..base.i18n import N_, _
from ..base.secrets import CREDENTIAL_ENV, is_secret_name
from .display import first_line
from .notices import Notice

NOTIFY_ENV = "FLOWER_NOTIFY"
TIMEOUT_ENV = "FLOWER_NOTIFY_TIMEOUT_S"
TIMEOUT_S = 10.0
FAILED = N_("  ! 通知命令没成功({why}),运行照常继续")
BAD_SETTING = N_("! 通知命令写得不对({why}):不发通知,运行照常继续")


def notify_argv(setting: str | None, *, warn: Callable[[str], None]) -> list[str] | None:
    """The command of `--notify` / $FLOWER_NOTIFY as argv; None when unset or unusable (said)."""
    if setting is None or not setting.strip():
        return None
    try:
        argv = shlex.split(setting)
    except ValueError as exc:
        warn(_(BAD_SETTING).format(why=exc))
        return None
    return argv or None


def timeout_s(environ: Mapping[str, str]) -> float:
    try:
        value = float(environ.get(TIMEOUT_ENV, ""))
    except ValueError:
        return TIMEOUT_S
    return value if value > 0 else TIMEOUT_S


def child_env(environ: Mapping[str, str]) -> dict[str, str]:
    """flower's environment without a credential: the user's command never needs the model's key."""
    return {k: v for k, v in environ.items() if k not in CREDENTIAL_ENV and not is_secret_name(k)}


def notifier_for(
    setting: str | None,
    *,
    warn: Callable[[str], None],
    ring: Callable[[str], object] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Notifier:
    """The notifier of a run: the command `setting` names (the CLI's `--notify`, the editor's
    `flower.notify`), else $FLOWER_NOTIFY; bounded by $FLOWER_NOTIFY_TIMEOUT_S."""
    environ = os.environ if environ is None else environ
    chosen = setting if setting is not None and setting.strip() else environ.get(NOTIFY_ENV)
    return Notifier(notify_argv(chosen, warn=warn), warn=warn, ring=ring, timeout=timeout_s(environ))


class Notifier:
    """Sends each notice to the terminal (when stdout is one) and to the user's command."""

    def __init__(
        self,
        argv: list[str] | None,
        *,
        warn: Callable[[str], None],
        ring: Callable[[str], object] | None = None,
        timeout: float = TIMEOUT_S,
    ) -> None:
        self.argv = argv
        self.warn = warn
        self.ring = ring
        self.timeout = timeout
        self._threads: list[threading.Thread] = []

    def send(self, notice: Notice) -> None:
        if self.ring is not None:
            with contextlib.suppress(OSError):  # a terminal gone away must not stop the run
                self.ring(notice.title())
        if self.argv is None:
            return
        thread = threading.Thread(target=self._run, args=(notice,), name="flower-notify", daemon=True)
        self._threads = [t for t in self._threads if t.is_alive()]
        self._threads.append(thread)
        thread.start()

    def _run(self, notice: Notice) -> None:
        assert self.argv is not None
        try:
            done = subprocess.run(
                self.argv,
                input=notice.dumps().encode("utf-8"),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=child_env(os.environ),
                timeout=self.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            self.warn(_(FAILED).format(why=_("{seconds:g} 秒没结束,停掉了").format(seconds=self.timeout)))
            return
        except OSError as exc:
            self.warn(_(FAILED).format(why=f"{self.argv[0]}: {exc.strerror or exc}"))
            return
        if done.returncode != 0:
            said = first_line(done.stderr.decode("utf-8", "replace"), 120)
            why = _("退出码 {code}").format(code=done.returncode) + (f": {said}" if said else "")
            self.warn(_(FAILED).format(why=why))

    def close(self) -> None:
        """Before flower exits: let the commands still running finish (each is bounded)."""
        for thread in self._threads:
            thread.join(self.timeout + 1.0)
