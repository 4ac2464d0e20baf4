"""The server's log file on a disk that fills up: one line on stderr that names the folder and
what to do, the log going on there, never logging's own traceback."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from flower.sim import disks
from flower_lsp.__main__ import LogFile

pytestmark = pytest.mark.skipif(disks.available() is not None, reason=str(disks.available()))


@pytest.fixture
def disk() -> Iterator[Path]:
    with disks.tmpfs(1 << 20) as point:
        yield point


def test_a_log_file_the_disk_refuses_is_said_once_and_the_log_goes_on(
    disk: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    handler = LogFile(str(disk / "logs" / "server.log"))
    (disk / "logs").mkdir()
    handler.setFormatter(logging.Formatter("%(levelname)s:%(message)s"))
    log = logging.Logger("flower-lsp-test")
    log.addHandler(handler)
    try:
        log.warning("before the disk filled")
        handler.flush()
        disks.fill(disk)
        for n in range(200):  # past the stream's buffer: the disk is really asked
            log.warning("line %d %s", n, "x" * 200)
    finally:
        handler.close()
        disks.free(disk)
    err = capsys.readouterr().err
    assert "Traceback" not in err and "Logging error" not in err
    [said] = [line for line in err.splitlines() if line.startswith("flower-lsp: ")]
    assert str(disk / "logs") in said and "磁盘满了" in said
    assert "WARNING:line 199" in err  # the log went on, on stderr
    assert (disk / "logs" / "server.log").read_text().startswith("WARNING:before the disk filled")
