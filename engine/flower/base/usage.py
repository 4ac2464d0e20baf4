"""How many tokens the model saw for one request, from the usage object the API answers with."""

from __future__ import annotations

# input alone undercounts: a cached prefix is reported as reads or writes beside it
_SEEN = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def context_tokens(usage: object) -> int:
    """What the model actually saw: input + cache reads + cache writes; 0 for anything else."""
    if not isinstance(usage, dict):
        return 0
    total = 0
    for key in _SEEN:
        value = usage.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            total += int(value)
    return total
