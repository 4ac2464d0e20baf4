"""The readers of untyped values: what each accepts, and the neutral value for the rest."""

import json
import random

from flower.base import loose

ODD: list[object] = [
    None,
    True,
    False,
    0,
    1,
    -3,
    2.5,
    3.0,
    float("nan"),
    "",
    "x",
    "12",
    [],
    [1],
    (1, 2),
    {},
    {"a": 1},
    {1: "a"},
    b"bytes",
    object(),
]


def test_each_reader_gives_its_type_for_every_odd_value():
    for value in ODD:
        assert isinstance(loose.mapping(value), dict)
        assert isinstance(loose.items(value), list)
        assert isinstance(loose.text(value), str)
        assert loose.nonempty(value) is None or loose.nonempty(value) == value
        assert loose.integer(value) is None or type(loose.integer(value)) is int
        assert loose.number(value) is None or type(loose.number(value)) is float
        assert loose.flag(value) is (value is True)


def test_what_is_accepted_and_what_is_not():
    assert loose.mapping({"a": 1}) == {"a": 1} and loose.mapping({1: "a"}) == {}
    assert loose.items((1, 2)) == [1, 2] and loose.items("ab") == [] and loose.items({"a": 1}) == []
    assert loose.text("x") == "x" and loose.text(12) == "" and loose.text(None, "-") == "-"
    assert loose.nonempty("") is None and loose.nonempty("a") == "a"
    assert loose.integer(True) is None and loose.integer("12") is None and loose.integer(3.0) == 3
    assert loose.integer(2.5) is None and loose.integer(-3) == -3
    assert loose.number(False) is None and loose.number(2) == 2.0 and loose.number("2") is None


def test_generated_json_documents_read_without_error():
    rng = random.Random(24)

    def value(depth: int) -> object:
        makers = [
            lambda: None,
            lambda: rng.random() < 0.5,
            lambda: rng.randint(-9, 9),
            lambda: rng.random(),
            lambda: "s" * rng.randrange(3),
            lambda: [value(depth + 1) for _ in range(rng.randrange(3))],
            lambda: {f"k{i}": value(depth + 1) for i in range(rng.randrange(3))},
        ]
        return makers[rng.randrange(7 if depth < 3 else 5)]()

    for _ in range(2000):
        doc = json.loads(json.dumps(value(0)))
        row = loose.mapping(doc)
        assert row == (doc if isinstance(doc, dict) else {})
        for key, item in row.items():
            assert isinstance(key, str)
            assert loose.items(item) == (item if isinstance(item, list) else [])
            assert loose.mapping(item) == (item if isinstance(item, dict) else {})
