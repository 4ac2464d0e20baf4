"""The language server object. Features (runs, banner, context meter, verdict diagnostics,
questions) register themselves here as they are built."""

from __future__ import annotations

from lsprotocol.converters import get_converter
from pygls.lsp.server import LanguageServer

from . import __version__


def build_server() -> LanguageServer:
    # get_converter keeps custom payloads as plain dicts (the default renames non-identifier keys)
    return LanguageServer("flower-lsp", __version__, converter_factory=get_converter)
