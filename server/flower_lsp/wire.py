"""How the server reads the messages a client sends: as pygls does, except that a request or a
notification without `params` (valid JSON-RPC, and what Neovim sends for `request(m, nil)`) is
read as one with `params: null`, instead of failing with no response at all."""

from __future__ import annotations

from typing import Any

from pygls.protocol import LanguageServerProtocol


class FlowerProtocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]) -> Any:
        # json.loads calls this for every object in a message; only a message has both keys
        if "jsonrpc" in data and "method" in data and "params" not in data:
            data = {**data, "params": None}
        return super().structure_message(data)
