"""Glances: the coordinator's own Bash commands, confined by the operating system, and the rules
that say which commands are glances.

**The promise holds by construction**: a glance can never change state, read outside the
workspace, print a credential or run for ever, whatever the command, because the hook runs
``confine(cmd, workspace=...)`` (``confinement``: read-only, no network, an allowlisted
environment, the workspace's secrets hidden, bounded in time and output, nothing left running)
and redacts what it prints. ``confine(cmd, workspace=..., role="judge")`` runs a judge's check on
a throw-away overlay of the workspace. Where no confinement is possible the rules below carry the
promise alone (``confined=False``), and a line says the walls are weaker.

A glance is a command the coordinator may run on its own main thread; on resume its result is
expired as stale. ``is_ephemeral`` decides both (the seeds' rule: what is admitted is exactly
what is expired), so ``delegate_guard(allow_glance=True)`` and the trim layer both ask it, with
the folder the command runs in. Judged ``confined`` (the default), the forms only the confinement
makes harmless are glances too (``env``, ``printenv``, ``cd DIR``, ``top -b -n N``, ``git remote
-v``); the rules' other job is to refuse early what is obviously hands-on.

A command line is a glance only when every one of these holds:

1. **Only admitted programs.** Each simple command names a program from ``programs`` (an
   allowlist) with a rule that accepts its arguments; each admitted form of it only reads.
   Unknown programs, paths to programs (``./ls``, ``/bin/ls``), variable assignments
   (``GIT_DIR=x git``, ``PAGER=sh git``) and every wrapper that runs another command (``env``,
   ``xargs``, ``exec``, ``eval``, ``source``, ``sudo``, ``nohup``, ``timeout``, ``watch``,
   shells, interpreters, package managers) are refused. A program name that resolves through
   PATH to a file inside the workspace is refused too.
2. **No program that runs configured or embedded code.** GNU sed's ``e``, ``w``, ``W``, ``r``,
   ``R`` and ``v`` commands and ``s///e``/``s///w`` flags, parsed as GNU sed parses scripts
   (labels end at a blank, ``;``, ``}``, ``#`` or newline); awk's ``system``, pipes,
   redirections, ``getline``, ``ENVIRON`` and ``ARGV``; git's ``-C``, ``-c``, ``--git-dir``,
   ``--work-tree``, pagers, ``--ext-diff``, ``--textconv``, ``--open-files-in-pager`` and any
   repository whose own config, hooks or gitlinks could run a program (fsmonitor, filters,
   textconv, external diff, ``post-index-change``, includes); kubectl with a foreign kubeconfig
   or server; pagers and editors; ``find -exec/-execdir/-ok/-okdir/-delete/-fprint*``; ``rg
   --pre``; ``sort --compress-program``; ``file -z``; ``diff -l``.
3. **Reads only inside the workspace.** Path operands are relative, without ``..`` or ``~``,
   and, with a known workspace, stay inside it once symlinks are resolved; a stated set of
   absolute paths is harmless (``/dev/null``, ``/dev/stdin``, ``/etc/os-release``,
   ``/proc/cpuinfo``, ``/proc/meminfo``, ``/proc/loadavg``, ``/proc/version``). Options that
   name another repository, daemon, cluster or config are refused.
4. **Nothing that prints the environment or a credential.** No ``$VAR``/``${...}`` or any other
   expansion; no ``env``, ``printenv``, ``set``, ``ps e``, ``/proc/*/environ``, ``jq env``,
   ``awk ENVIRON``, ``git config --list``, ``git var -l``, ``git remote -v`` (URLs can hold
   tokens), ``kubectl config view``, ``kubectl describe``, ``kubectl get -o yaml``, ``docker
   inspect``; no content read of a credential file (``.env*``, ``.ssh``, ``.aws``, ``.netrc``,
   ``.git-credentials``, key files, ``.git/config``, ...: see ``credentials``), by name or
   through a symlink or hard link; recursive content reads (``grep -r``, ``rg``) only over a
   tree that provably holds none (``grep -rn foo src/`` passes, ``grep -r API_KEY .`` does not).
5. **Nothing that changes state.** No redirection except into ``/dev/null`` and between stdout
   and stderr; no background ``&``; no option that writes (``sed -i``, ``sort -o``, ``tree
   -o``, ``uniq IN OUT``, ``git diff --output``, ...); no ref-creating forms (``git branch
   NAME``, ``git tag NAME``); nothing that follows or watches forever (``tail -f``, ``logs -f``).
6. **Only characters whose meaning is certain.** Printable ASCII, tab, newline, and letters,
   digits and marks of any script; no control or format character (NUL, CR, bidi controls,
   zero-width characters), no line or paragraph separator, no non-ASCII space, punctuation or
   symbol (look-alike bars and semicolons).
7. **Only what the lexer can prove.** Quoting follows bash's rules; substitutions, subshells,
   brace and tilde expansion, here-documents, comments, and anything bash would reject are
   refused. Unquoted globs are expanded against the workspace under every ``dotglob`` and
   ``nocaseglob`` setting, and each expansion is judged.

Compound commands are judged segment by segment: each simple command must be a glance on its
own, and one that is not refuses the whole line.

What a user must still trust: their own shell startup files, aliases and functions, and their
own global git, docker and kubectl configuration, which any command they run uses as well.
Programs' own caches (git's index stat cache, kubectl's discovery cache) may be refreshed.
"""

from __future__ import annotations

from .confinement import Confinement, ConfinementUnavailable, confine, plan, support
from .predicate import Verdict, is_ephemeral, judge

__all__ = [
    "Confinement",
    "ConfinementUnavailable",
    "Verdict",
    "confine",
    "is_ephemeral",
    "judge",
    "plan",
    "support",
]
