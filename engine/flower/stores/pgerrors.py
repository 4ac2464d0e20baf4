"""What a PostgreSQL connection failure means to a person: its cause and what to do, on one line.

libpq's messages name the socket or the host and the server's own words, sometimes over two lines
("Is the server running locally ...?"); a person is told which of the usual causes it is (the
server stopped or out of reach, a refused password, a database that is not there, a server
starting or shutting down), with the driver's words after it, on one line, secrets masked.
"""

from __future__ import annotations

import re

from ..base.i18n import N_, _
from .urls import redact_text

__all__ = ["explain", "one_line"]

NO_SERVER = N_(
    "数据库服务器没在跑(那个地址上没人应答):启动它,或者检查 URL 里的主机、端口和 host=,再跑一次 flower"
)
UNREACHABLE = N_("到不了数据库主机(找不到这个名字,或者网络不通):检查 URL 里的主机名和网络,再跑一次 flower")
PASSWORD = N_("数据库不认这个用户或密码:检查 URL 里的用户名,和 ~/.pgpass 或 PGPASSWORD 里的密码")
NO_DATABASE = N_("库 {db} 不存在:先建好它(createdb {db}),或者改 URL 里的库名")
SHUTTING = N_("数据库刚重启过,或者正在启动、关闭:等它起来再跑一次 flower")

_MISSING_DB = re.compile(r'database "([^"]+)" does not exist')
_CAUSES: tuple[tuple[str, str], ...] = (
    ("password authentication failed", PASSWORD),
    ("no password supplied", PASSWORD),
    ("pg_hba.conf", PASSWORD),
    ("the database system is starting up", SHUTTING),
    ("the database system is shutting down", SHUTTING),
    ("the database system is in recovery", SHUTTING),
    ("terminating connection due to administrator command", SHUTTING),
    ("no such file or directory", NO_SERVER),
    ("connection refused", NO_SERVER),
    ("failed to resolve host", UNREACHABLE),
    ("could not translate host name", UNREACHABLE),
    ("timeout expired", UNREACHABLE),
    ("no route to host", UNREACHABLE),
    ("network is unreachable", UNREACHABLE),
    ("server closed the connection unexpectedly", SHUTTING),
)


def one_line(exc: BaseException, url: str | None = None) -> str:
    """The driver's words on one line, with the URL's secrets masked."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return redact_text(text, url)


def explain(exc: BaseException, url: str | None = None) -> str:
    """The cause and what to do, then the driver's words; the driver's words alone when the cause
    is none of the usual ones."""
    words = one_line(exc, url)
    lowered = words.lower()
    missing = _MISSING_DB.search(words)
    if missing is not None:
        return f"{_(NO_DATABASE).format(db=missing.group(1))}({words})"
    for needle, cause in _CAUSES:
        if needle in lowered:
            return f"{_(cause)}({words})"
    return words
