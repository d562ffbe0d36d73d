"""``copy_payload``: the deep copy contexts make of their deep-copied fields.

It copies dicts and lists itself and hands everything else to ``copy.deepcopy``; what
comes back must be a deep copy either way: equal, and sharing nothing that can change.
"""

from __future__ import annotations

import copy
from typing import Any

from stageware.runtime import copy_payload


def test_json_like_payloads_are_copied_all_the_way_down() -> None:
    value: dict[str, Any] = {
        "role": "user",
        "content": [
            {"text": "hello"},
            {"toolResult": {"toolUseId": "t1", "content": [{"json": {"found": ["a", 1.5]}}]}},
            {"image": {"source": {"bytes": b"\x89PNG"}}},
        ],
    }
    copied = copy_payload(value)
    assert copied == value
    assert copied is not value
    assert copied["content"] is not value["content"]
    result = copied["content"][1]["toolResult"]
    original = value["content"][1]["toolResult"]
    assert result is not original
    assert result["content"][0]["json"]["found"] is not original["content"][0]["json"]["found"]
    result["content"][0]["json"]["found"].append("b")
    assert original["content"][0]["json"]["found"] == ["a", 1.5]


def test_anything_else_is_deep_copied_too() -> None:
    class Leaf:
        def __init__(self) -> None:
            self.seen = [1]

    leaf = Leaf()
    value: dict[str, Any] = {
        "list": [1, "a", None, 2.5, b"x", {"k": [True]}],
        "leaf": leaf,
        "tuple": ([1],),
        "set": {1, 2},
    }
    copied = copy_payload(value)
    assert copied["list"] == value["list"]
    assert copied["tuple"] == value["tuple"]
    assert copied["set"] == value["set"]
    assert copied["leaf"].seen == [1]
    assert copied["list"][5] is not value["list"][5]
    assert copied["leaf"] is not leaf
    assert copied["leaf"].seen is not leaf.seen
    assert copied["tuple"][0] is not value["tuple"][0]
    assert copied["set"] is not value["set"]


def test_a_cycle_is_copied_as_deepcopy_copies_it() -> None:
    cycle: list[Any] = []
    cycle.append({"back": cycle})
    copied = copy_payload(cycle)
    assert copied is not cycle
    assert copied[0]["back"] is copied


def test_immutable_values_are_returned_as_they_are() -> None:
    for value in ("text", 3, 2.5, True, None, b"bytes"):
        assert copy_payload(value) is value
    frozen = frozenset({1})
    assert copy_payload(frozen) == copy.deepcopy(frozen)
