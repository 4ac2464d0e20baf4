"""docker and kubectl: listings and logs only, against the user's own daemon and clusters.

- No global option that points the client elsewhere or brings in other configuration:
  docker's ``-H``/``--context``/``--config``, kubectl's ``--kubeconfig``, ``--server``, ``--token``,
  ``--as``, ``--cache-dir``, ``--profile`` ... (a foreign kubeconfig can name an exec plugin, which
  kubectl runs). ``--namespace`` and ``--context`` of the user's own kubeconfig stay allowed.
- Nothing that prints configuration or secrets: ``docker inspect`` (container environments),
  ``docker history`` (build arguments), ``kubectl describe`` (pod environments), ``kubectl get``
  with any output but the table (``-o wide``/``name``), ``kubectl config view``, ``rollout history
  --revision``.
- Nothing that follows or watches: ``logs -f``, ``get -w``, ``stats`` without ``--no-stream``.
- ``docker compose`` is refused: it reads the workspace's compose files and ``.env``, which can
  point it at another daemon.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..context import Context
from ..options import Table, options, parse
from ..refusal import Refused
from .base import Program, count

_FILTERS = ("-f, --filter=FILTER", "--format=FORMAT", "--no-trunc", "-q, --quiet")
DOCKER: dict[tuple[str, ...], tuple[Table, int, int]] = {}


def _docker_form(names: Sequence[tuple[str, ...]], table: Table, low: int = 0, high: int = 0) -> None:
    for name in names:
        DOCKER[name] = (table, low, high)


_docker_form(
    [("ps",), ("container", "ls"), ("container", "list"), ("container", "ps")],
    options("-a, --all", *_FILTERS, "-n, --last=N", "-l, --latest", "-s, --size"),
)
_docker_form(
    [("images",), ("image", "ls"), ("image", "list")],
    options("-a, --all", "--digests", *_FILTERS),
)
_docker_form(
    [("logs",), ("container", "logs")],
    options("--details", "--since=TIME", "-n, --tail=N", "-t, --timestamps", "--until=TIME"),
    1,
    1,
)
# `docker top NAME [ps options]` runs ps inside the container: `docker top web e` prints its environment.
_docker_form([("top",), ("container", "top")], options(), 1, 1)
_docker_form([("port",), ("container", "port")], options(), 1, 2)
_docker_form(
    [("stats",), ("container", "stats")],
    options("--no-stream", "-a, --all", "--format=FORMAT", "--no-trunc"),
    0,
    99,
)
_docker_form([("system", "df")], options("-v, --verbose", "--format=FORMAT"))
_docker_form([("version",)], options("-f, --format=FORMAT"))
_docker_form([("info",), ("system", "info")], options("-f, --format=FORMAT"))
_docker_form(
    [("network", "ls"), ("network", "list"), ("volume", "ls"), ("volume", "list")], options(*_FILTERS)
)
_docker_form([("context", "ls"), ("context", "list")], options("--format=FORMAT", "-q, --quiet"))
_docker_form([("context", "show")], options())


def _docker(argv: Sequence[str], ctx: Context) -> None:
    ctx.own_configuration("docker", ("DOCKER_CONFIG",), (".docker",))
    for size in (2, 1):
        form = tuple(argv[:size])
        if form in DOCKER:
            table, low, high = DOCKER[form]
            parsed = parse(table, argv[size:])
            count(parsed, low, high)
            if form[-1] == "stats" and not parsed.has("--no-stream"):
                raise Refused("docker stats without --no-stream")
            return
    raise Refused(f"docker {' '.join(argv[:2])}" if argv else "docker without a command")


_KUBE_GLOBAL = ("-n, --namespace=NAMESPACE", "--context=CONTEXT", "--request-timeout=TIME")
_TABLE_OUTPUT = frozenset({"wide", "name"})
KUBECTL: dict[tuple[str, ...], tuple[Table, int, int]] = {}


def _kube_form(name: tuple[str, ...], table_lines: Sequence[str], low: int = 0, high: int = 0) -> None:
    KUBECTL[name] = (options(*_KUBE_GLOBAL, *table_lines), low, high)


_kube_form(
    ("get",),
    [
        "-o, --output=FORMAT",
        "-l, --selector=SELECTOR",
        "-A, --all-namespaces",
        "--show-labels",
        "--show-kind",
        "--field-selector=SELECTOR",
        "--sort-by=FIELD",
        "--no-headers",
        "-L, --label-columns=LABELS",
        "--chunk-size=N",
        "--ignore-not-found",
    ],
    1,
    99,
)
_kube_form(
    ("logs",),
    [
        "-c, --container=NAME",
        "--tail=N",
        "--since=DURATION",
        "--since-time=TIME",
        "-p, --previous",
        "--timestamps",
        "--all-containers",
        "-l, --selector=SELECTOR",
        "--prefix",
        "--limit-bytes=N",
        "--max-log-requests=N",
        "--ignore-errors",
    ],
    1,
    2,
)
_kube_form(
    ("top",),
    ["-l, --selector=SELECTOR", "-A, --all-namespaces", "--containers", "--sort-by=FIELD", "--no-headers"],
    1,
    2,
)
_kube_form(("events",), ["-A, --all-namespaces", "--for=OBJECT", "--types=TYPES", "--no-headers"])
_kube_form(
    ("api-resources",),
    ["--namespaced[=BOOL]", "--api-group=GROUP", "--verbs=VERBS", "-o, --output=FORMAT", "--no-headers"],
)
_kube_form(("api-versions",), [])
_kube_form(("explain",), ["--recursive", "--api-version=VERSION"], 1, 1)
_kube_form(("cluster-info",), [])
_kube_form(("version",), ["--client"])
_kube_form(("config", "current-context"), [])
_kube_form(("config", "get-contexts"), ["-o, --output=FORMAT", "--no-headers"], 0, 1)
_kube_form(("config", "get-clusters"), [])
_kube_form(("auth", "can-i"), ["-A, --all-namespaces", "--subresource=NAME"], 1, 3)
_kube_form(("auth", "whoami"), [])
_kube_form(("rollout", "status"), ["--watch=BOOL", "--timeout=TIME"], 1, 1)
_kube_form(("rollout", "history"), [], 1, 1)


def _kubectl(argv: Sequence[str], ctx: Context) -> None:
    ctx.own_configuration("kubectl", ("KUBECONFIG",), (".kube",))
    # Global options may come first; the command is the first one or two other words.
    words = list(argv)
    head: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word in ("-n", "--namespace", "--context", "--request-timeout"):
            head += words[i : i + 2]
            i += 2
        elif word.startswith(("--namespace=", "--context=", "--request-timeout=")):
            head.append(word)
            i += 1
        elif word.startswith("-"):
            raise Refused(f"kubectl option {word.split('=', 1)[0]}")
        else:
            break
    for size in (2, 1):
        form = tuple(words[i : i + size])
        if form in KUBECTL:
            table, low, high = KUBECTL[form]
            parsed = parse(table, head + words[i + size :])
            count(parsed, low, high)
            for output in parsed.values("-o"):
                if output not in _TABLE_OUTPUT:
                    raise Refused(f"kubectl -o {output} (prints whole objects)")
            return
    raise Refused(f"kubectl {' '.join(words[i : i + 2])}" if i < len(words) else "kubectl without a command")


PROGRAMS = [
    Program("docker", _docker, "listings and logs; no inspect, history, compose or global options"),
    Program("kubectl", _kubectl, "tables and logs from the user's own kubeconfig; no describe, -o yaml"),
]
