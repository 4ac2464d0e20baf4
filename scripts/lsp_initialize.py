"""Start a language server over stdio, initialize it, shut it down; print what it said it is.

`make dist` runs this with the Python of a fresh environment that installed the wheel, against that
environment's `flower-lsp`, to prove the installed server starts and answers `initialize`.
Usage: python scripts/lsp_initialize.py COMMAND [ARG...]   (prints one JSON line; exit 1 on failure)
"""

from __future__ import annotations

import asyncio
import json
import sys

from lsprotocol import types
from pygls.lsp.client import LanguageClient

TIMEOUT_S = 60


async def initialize(command: list[str]) -> dict[str, object]:
    client = LanguageClient("flower-dist-check", "1")
    await client.start_io(*command)
    try:
        result = await asyncio.wait_for(
            client.initialize_async(
                types.InitializeParams(capabilities=types.ClientCapabilities(), process_id=None)
            ),
            TIMEOUT_S,
        )
        client.initialized(types.InitializedParams())
        await asyncio.wait_for(client.shutdown_async(None), TIMEOUT_S)
        client.exit(None)
    finally:
        await client.stop()  # type: ignore[no-untyped-call]  # pygls leaves it unannotated
    provider = result.capabilities.execute_command_provider
    return {
        "name": result.server_info.name if result.server_info else None,
        "version": result.server_info.version if result.server_info else None,
        "commands": sorted(provider.commands) if provider else [],
    }


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        answer = asyncio.run(initialize(argv))
    except Exception as err:
        print(f"{' '.join(argv)} did not answer initialize: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
