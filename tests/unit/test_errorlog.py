"""The server's stderr as a person reads it: a request refused as the client's mistake is one
line at INFO, any other exception one line with its type, never a traceback."""

from __future__ import annotations

import io
import logging

from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams

from flower_lsp.errorlog import PYGLS_RPC, ClientErrors, OneLine


def logged(name: str, exc: BaseException, *, level: int = logging.WARNING) -> str:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(ClientErrors())
    handler.addFilter(OneLine())
    root, logger = logging.getLogger(), logging.getLogger(name)
    before = root.level
    root.addHandler(handler)
    root.setLevel(level)
    try:
        try:
            raise exc
        except BaseException:
            logger.exception('Exception occurred for message "%s"', 7)
    finally:
        root.removeHandler(handler)
        root.setLevel(before)
    return out.getvalue()


def test_a_refused_request_is_one_line_at_info_and_silent_at_warning() -> None:
    exc = JsonRpcInvalidParams("flower/state: unknown field(s) junk\nmore")
    assert logged(PYGLS_RPC, exc) == ""
    assert (
        logged(PYGLS_RPC, exc, level=logging.INFO)
        == "refused request 7: flower/state: unknown field(s) junk\n"
    )


def test_any_other_exception_is_one_line_with_its_type() -> None:
    for name, exc in (
        (PYGLS_RPC, JsonRpcInternalError("boom")),
        ("flower_lsp.runs", ValueError("bad\nworse")),
    ):
        text = logged(name, exc)
        assert "Traceback" not in text and text.count("\n") == 1, text
        assert (
            text == f'Exception occurred for message "7": {type(exc).__name__}: {str(exc).splitlines()[0]}\n'
        )
