"""A row of a run's books, as one typed value with one parser and one formatter.

``manifest.json`` (and a shared store's manifest) is a list of rows. The Runtime writes one per
step it runs (its first attempt, a round, a retry, a judge's verdict, a handoff turn, the
handover at the end); a rewind or a fork writes one that carries its record:

    {"step": "干活#round2", "session_id": "...", "ok": true, "cost_usd": 0.4, "num_turns": 3,
     "text": "...", "error": null, "started_at": 1.0, "ended_at": 2.0, "attempts": 1,
     "errors": [], "resumed": false, "retired": [], "context": 81234, "duration_s": 1.0,
     "run": "20261203-072753-524b46"}
    {"step": "rewind", "run": "rewind-<id>", "session_id": null, "ok": true,
     "started_at": 1.0, "ended_at": 1.0, "rewind": {"id": "<id>", "kind": "rewind", ...}}

`ManifestRow.of_json` is the only reader of a row's keys and `ManifestRow.as_json` the only
writer: the Runtime, recovery, rewind and fork, the shared store's books and the history all go
through them. Reading is tolerant, as flower has always been with its books: a missing key is its
default, a value of the wrong type reads as the default, a key this flower does not know is kept.
A row that was read is written back exactly as it was read (its keys, their order, their values),
so a flower never rewrites another process's rows, an older flower's or a newer one's, into
something else; only a row changed with `dataclasses.replace` is formatted anew.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .labels import LabelKind, StepLabel

__all__ = ["BRANCH_KEYS", "STEP_KEYS", "Branch", "ManifestError", "ManifestRow", "looks_like_row", "rows_of"]

# the keys of a step's row, in the order flower writes them (a StepResult's fields, then these two)
STEP_KEYS = (
    "step",
    "session_id",
    "ok",
    "cost_usd",
    "num_turns",
    "text",
    "error",
    "started_at",
    "ended_at",
    "attempts",
    "errors",
    "resumed",
    "retired",
    "context",
    "duration_s",
    "run",
)
# the keys of a rewind's or a fork's row, in the order flower writes them
BRANCH_KEYS = ("step", "run", "session_id", "ok", "started_at", "ended_at", "rewind")
_KNOWN = frozenset(STEP_KEYS) | frozenset(BRANCH_KEYS)


class ManifestError(ValueError):
    """What was given as a manifest row is not one (not a JSON object)."""


def _float(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _int(value: object, default: int = 0) -> int:
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return default


def _text(value: object) -> str | None:
    """A non-empty text, else None."""
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class Branch:
    """The record of a rewind or a fork (``core/rewind.py``, ``core/fork.py``) a row carries."""

    id: str = ""
    kind: str = ""  # rewind / fork; "" when the record does not say
    round: int = 0  # the judged round the work went back to
    from_round: int = 0  # the round the work had reached
    at: float = 0.0
    remark: str = ""
    # the whole record as written, every key kept (what changed, what was kept, where from ...)
    data: Mapping[str, object] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of_json(cls, data: Mapping[str, object]) -> Branch:
        return cls(
            id=str(data.get("id") or ""),
            kind=_text(data.get("kind")) or "",
            round=_int(data.get("round")),
            from_round=_int(data.get("from_round")),
            at=_float(data.get("at")),
            remark=_text(data.get("remark")) or "",
            data=dict(data),
        )

    def as_json(self) -> dict[str, object]:
        return dict(self.data)


@dataclass(frozen=True)
class ManifestRow:
    """One row of the books: what ran (its label), in which process (``run``), and its ledger."""

    step: StepLabel
    run: str  # the process's run id; a rewind's and a fork's row: "<kind>-<id>"
    session_id: str | None = None
    ok: bool = False
    cost_usd: float = 0.0
    num_turns: int = 0
    text: str = ""
    error: str | None = None
    started_at: float = 0.0
    ended_at: float = 0.0  # 0 while the step runs (or when its process died in it)
    attempts: int = 1
    errors: tuple[str, ...] = ()  # what went wrong in attempts that were retried
    resumed: bool = False
    retired: tuple[str, ...] = ()  # the sessions that handed over to the next, in order
    context: int = 0
    duration_s: float = 0.0
    rewind: Branch | None = None  # a rewind's or a fork's row: its record
    extra: Mapping[str, object] = field(default_factory=dict, hash=False)  # keys flower does not know
    # the JSON this row was read from: written back as it was (never copied by `replace`)
    _source: Mapping[str, object] | None = field(default=None, init=False, compare=False, repr=False)

    # -- reading ----------------------------------------------------------------------------------
    @classmethod
    def of_json(cls, data: object) -> ManifestRow:
        """The row a JSON object holds; total on objects (see the module), ManifestError otherwise."""
        if not isinstance(data, Mapping):
            raise ManifestError(f"a manifest row is a JSON object, not {type(data).__name__}")
        step, run, rewind, error = data.get("step"), data.get("run"), data.get("rewind"), data.get("error")
        row = cls(
            step=StepLabel.parse(step) if isinstance(step, str) else StepLabel(""),
            run=run if isinstance(run, str) else "",
            session_id=_text(data.get("session_id")),
            ok=data.get("ok") is True,
            cost_usd=_float(data.get("cost_usd")),
            num_turns=_int(data.get("num_turns")),
            text=str(data.get("text") or ""),
            error=error if isinstance(error, str) else None,
            started_at=_float(data.get("started_at")),
            ended_at=_float(data.get("ended_at")),
            attempts=_int(data.get("attempts"), 1),
            errors=tuple(e for e in data.get("errors") or () if isinstance(e, str)),
            resumed=data.get("resumed") is True,
            retired=tuple(s for s in data.get("retired") or () if isinstance(s, str) and s),
            context=_int(data.get("context")),
            duration_s=_float(data.get("duration_s")),
            rewind=Branch.of_json(rewind) if isinstance(rewind, Mapping) else None,
            extra={k: v for k, v in data.items() if k not in _KNOWN},
        )
        object.__setattr__(row, "_source", dict(data))
        return row

    @classmethod
    def of_branch(cls, record: Mapping[str, object]) -> ManifestRow:
        """The row a rewind or a fork leaves in the books: its record, at its moment."""
        kind, at = record.get("kind", "rewind"), _float(record.get("at", 0.0))
        return cls(
            step=StepLabel.parse(str(kind)),
            run=f"{kind}-{record['id']}",
            ok=True,
            started_at=at,
            ended_at=at,
            rewind=Branch.of_json(record),
        )

    @property
    def well_formed(self) -> bool:
        """The row names its step and its run (a row read without them is kept, never used)."""
        return self._holds_text("step") and self._holds_text("run")

    @property
    def has_run(self) -> bool:
        return self._holds_text("run")

    def _holds_text(self, key: str) -> bool:
        return self._source is None or isinstance(self._source.get(key), str)

    @property
    def lineage_key(self) -> str | None:
        """The step whose session the row continues; None for a side turn or a row without a step."""
        return (self.step.lineage_key or None) if self._holds_text("step") else None

    @property
    def sessions(self) -> set[str]:
        """The sessions the row ran in: its own and those it handed over."""
        return {s for s in (self.session_id, *self.retired) if s}

    @property
    def is_handoff(self) -> bool:
        return self.step.kind is LabelKind.HANDOFF

    # -- writing ----------------------------------------------------------------------------------
    def as_json(self) -> dict[str, object]:
        """The row as the books hold it: as it was read, or in the order flower writes its keys."""
        if self._source is not None:
            return dict(self._source)
        values: dict[str, object] = {
            "step": str(self.step),
            "session_id": self.session_id,
            "ok": self.ok,
            "cost_usd": self.cost_usd,
            "num_turns": self.num_turns,
            "text": self.text,
            "error": self.error,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "attempts": self.attempts,
            "errors": list(self.errors),
            "resumed": self.resumed,
            "retired": list(self.retired),
            "context": self.context,
            "duration_s": self.duration_s,
            "run": self.run,
        }
        if self.rewind is not None:
            values["rewind"] = self.rewind.as_json()
            out = {key: values[key] for key in BRANCH_KEYS}
        else:
            out = {key: values[key] for key in STEP_KEYS}
        out.update((k, v) for k, v in self.extra.items() if k not in out)
        return out


def looks_like_row(value: object) -> bool:
    """Whether a JSON value found in a torn manifest is a row: an object with a step and a run."""
    return isinstance(value, dict) and "step" in value and "run" in value


def rows_of(data: Iterable[object]) -> list[ManifestRow]:
    """The rows of a manifest's JSON list; what is not an object is left out (recovery says so)."""
    return [ManifestRow.of_json(item) for item in data if isinstance(item, Mapping)]
