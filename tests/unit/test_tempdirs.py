"""Private temporary folders that hold Unix sockets whatever $TMPDIR is (base/tempdirs.py): the
operating system's own bind is the judge, not the arithmetic."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import tempfile
from pathlib import Path

import pytest

from flower.base.tempdirs import SOCKET_PATH_MAX, socket_tempdir
from flower.core.runtime import CLI_SOCKET_NAME

SOCKET = "claude-socks-" + "0" * 16 + ".sock"  # the CLI's sandbox bridge, as it names it


def bind_in(folder: Path) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(str(folder / SOCKET))


@pytest.fixture
def temp_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Set $TMPDIR (as tempfile sees it) to a folder `depth` bytes long."""

    def at(depth: int) -> Path:
        name = "t" * max(1, depth - len(str(tmp_path)) - 1)
        root = tmp_path / name
        root.mkdir(exist_ok=True)
        monkeypatch.setattr(tempfile, "tempdir", str(root))
        return root

    return at


def test_the_room_is_the_clis_socket_name() -> None:
    assert len("/" + SOCKET) == CLI_SOCKET_NAME


def test_a_short_temp_folder_is_used_and_the_folder_is_private(monkeypatch: pytest.MonkeyPatch) -> None:
    root = Path(tempfile.mkdtemp(prefix="s", dir="/tmp"))  # about 14 bytes: room to spare
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    try:
        folder = socket_tempdir("flower-", CLI_SOCKET_NAME)
        assert folder.parent == root and folder.name.startswith("flower-")
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        bind_in(folder)
    finally:
        shutil.rmtree(root)


@pytest.mark.parametrize("depth", [40, 52, 53, 70, 90, 120, 200, 250])
def test_a_socket_binds_in_the_folder_whatever_the_temp_folders_length(temp_root, depth: int) -> None:
    root = temp_root(depth)
    folder = socket_tempdir("flower-", CLI_SOCKET_NAME)
    try:
        assert len(os.fsencode(folder / SOCKET)) <= SOCKET_PATH_MAX
        bind_in(folder)  # the kernel agrees
        if len(os.fsencode(root)) + len("/flower-12345678") + CLI_SOCKET_NAME <= SOCKET_PATH_MAX:
            assert folder.parent == root  # room enough: the person's own temp folder
        else:
            assert folder.parent in (Path("/tmp"), Path("/var/tmp"))
    finally:
        shutil.rmtree(folder)


def test_every_length_of_temp_folder_and_prefix_leaves_the_room(temp_root) -> None:
    made = []
    try:
        for depth in range(len(str(temp_root(1).parent)) + 2, 240, 3):
            temp_root(depth)
            for prefix in ("f-", "flower-", "flower-home-"):
                folder = socket_tempdir(prefix, CLI_SOCKET_NAME)
                made.append(folder)
                assert len(os.fsencode(folder)) + CLI_SOCKET_NAME <= SOCKET_PATH_MAX, (depth, prefix)
    finally:
        for folder in made:
            shutil.rmtree(folder, ignore_errors=True)
