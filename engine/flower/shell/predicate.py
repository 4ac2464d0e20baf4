"""``is_ephemeral``: the judgment, in the seeds' order.

1. Empty or blank: not a glance.
2. A character outside the safe set, an expansion or substitution, or anything else the lexer does
   not model: not a glance.
3. A redirection other than into ``/dev/null``, ``2>&1``-style duplications or ``</dev/null``:
   not a glance.
4. A lone ``&`` (background job): not a glance.
5. Every simple command between ``&&``, ``||``, ``;``, ``|``, ``|&`` and newlines, judged on its
   own, must be an admitted program whose rule accepts its arguments, under every expansion
   bash may give its globs. One refused command refuses the line; one admitted command does not
   admit the rest.

Whatever cannot be judged (a bug included) is refused: a false refusal costs one subagent, a
false admission can change state or leak a secret.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .chars import unsafe_character
from .commands import safe_redirection, split_commands
from .context import Context
from .globs import expand_words
from .lexer import tokenize
from .programs import PROGRAMS
from .refusal import Refused


@dataclass(frozen=True)
class Verdict:
    admitted: bool
    reason: str  # why not, in a few words; "" when admitted

    def __bool__(self) -> bool:
        return self.admitted


def _workspace(value: str | Path | None) -> Path | None:
    if value is None or (isinstance(value, str) and not value):
        return None
    return Path(value)


def _judge(cmd: str, ctx: Context) -> None:
    if not cmd.strip():
        raise Refused("an empty command")
    bad = unsafe_character(cmd)
    if bad is not None:
        raise Refused(f"the character U+{ord(bad):04X}")
    commands, background = split_commands(tokenize(cmd))
    for command in commands:
        for r in command.redirections:
            if not safe_redirection(r):
                raise Refused(f"the redirection {r.fd or ''}{r.op}{r.target.value}")
    if background:
        raise Refused("a background job ('&')")
    for command in commands:
        verb, *args = command.words
        # a lone `[` is the test builtin, not a pattern (a bracket needs its `]` in the word)
        if (verb.has_glob and verb.value != "[") or verb.value not in PROGRAMS:
            raise Refused(f"the program {verb.value!r} is not a glance")
        program = PROGRAMS[verb.value]
        if not program.builtin:
            ctx.program(program.name)
        for argv in expand_words(args, ctx.workspace):
            program.check(argv, ctx)


def judge(cmd: str, *, workspace: str | Path | None = None, confined: bool = True) -> Verdict:
    """Whether ``cmd`` is a glance when run in ``workspace``, and if not, why.

    ``confined``: the command runs inside ``flower.shell.confine`` (the glance as the coordinator
    runs it, and what expires); False judges it for a run without confinement, where the rules
    alone must keep it harmless."""
    if not isinstance(cmd, str):
        return Verdict(False, "not a string")
    try:
        _judge(cmd, Context(_workspace(workspace), confined=confined))
    except Refused as refusal:
        return Verdict(False, refusal.reason)
    except Exception as exc:  # fail closed: an unexpected input is never a glance
        return Verdict(False, f"could not be judged ({type(exc).__name__})")
    return Verdict(True, "")


def is_ephemeral(cmd: str, *, workspace: str | Path | None = None, confined: bool = True) -> bool:
    """Whether a Bash command line is a read-only glance (see ``flower.shell``)."""
    return judge(cmd, workspace=workspace, confined=confined).admitted
