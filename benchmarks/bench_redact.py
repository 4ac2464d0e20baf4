"""What the redaction costs where flower writes: one transcript entry, small and large.

Every entry the session store appends and every event a front end gets goes through
`redact_value`; this prints its median time for entries shaped like the ones the CLI mirrors.
Prints figures; asserts nothing.

usage: python benchmarks/bench_redact.py [REPEAT] [--smoke]
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from _cli import size_or_smoke
from flower.base.secrets import redact_value


def entry(text: str) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": "toolu_01", "content": text}
    return {"type": "user", "uuid": "3f2b8c1e-9a4d-4e6f-8b2a-1c3d5e7f9a0b", "message": {"content": [block]}}


SHAPES = {
    "a short reply": entry("ok, done"),
    "a 4 KiB build log": entry("\n".join(f"{i} compiling module_{i}.py" for i in range(180))),
    "a 35 KiB build log": entry("\n".join(f"{i} some output line of a build log" for i in range(1000))),
    "a 35 KiB `env` dump": entry(
        "\n".join(f"VAR_{i}=value-{i} PATH=/usr/bin TOKEN_{i}=t{i}x" for i in range(900))
    ),
}


def median_us(value: Any, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        redact_value(value)
        runs.append(time.perf_counter() - start)
    return statistics.median(runs) * 1e6


def main(repeat: int) -> None:
    print(f"redact_value, median of {repeat}:")
    for name, value in SHAPES.items():
        size = len(value["message"]["content"][0]["content"])
        print(f"  {name:22} {size / 1024:6.1f} KiB  {median_us(value, repeat):9.1f} us")


if __name__ == "__main__":
    main(size_or_smoke(__doc__.splitlines()[0], "repeat", int, 200, 3, "timings per shape"))
