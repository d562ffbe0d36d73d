"""``copy_on_read`` and ``CopyOnReadList``: a deep copy of a list, made as elements are read.

Each test holds the source list's elements and a deep snapshot of them, and checks the two
halves of the contract: whatever a reader gets out of the list is a copy (mutating it never
changes the source), and the list behaves as a list copied up front would, writes included.
"""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest

from stageware.runtime import CopyOnReadList, copy_on_read, copy_payload

Item = dict[str, Any]


def source(count: int = 5) -> list[Item]:
    return [
        {"n": index, "tags": [str(index)], "nested": {"deep": [index]}} for index in range(count)
    ]


def raw(items: list[Item]) -> list[Item]:
    """The slots as they are, without reading them through the list."""
    slots: list[Item] = list.copy(items)  # pyright: ignore[reportUnknownMemberType]
    return slots


def extended(plain: list[Item], items: list[Item]) -> list[Item]:
    plain.extend(items)
    return plain


def slice_assigned(plain: list[Item], items: list[Item]) -> list[Item]:
    plain[:] = items
    return plain


def is_source_element(item: Item, elements: list[Item]) -> bool:
    return any(item is element for element in elements)


def test_nothing_is_copied_until_it_is_read() -> None:
    elements = source()
    items = copy_on_read(elements)
    assert type(items) is CopyOnReadList
    assert items == elements
    assert all(slot is element for slot, element in zip(raw(items), elements, strict=True))
    assert len(items) == 5
    assert bool(items)


def test_a_read_copies_the_element_into_its_slot_and_only_that_one() -> None:
    elements = source()
    snapshot = copy.deepcopy(elements)
    items = copy_on_read(elements)

    third = items[2]
    third["nested"]["deep"].append("changed")

    assert elements == snapshot
    assert third is not elements[2]
    assert items[2] is third  # read again: the same copy
    assert items[-3] is third
    slots = raw(items)
    assert slots[2] is third
    assert all(slots[index] is elements[index] for index in (0, 1, 3, 4))


@pytest.mark.parametrize(
    "read",
    [
        pytest.param(lambda items: [items[index] for index in range(len(items))], id="index"),
        pytest.param(lambda items: [item for item in items], id="iteration"),  # noqa: C416
        pytest.param(list, id="list()"),
        pytest.param(tuple, id="tuple()"),
        pytest.param(lambda items: [*items], id="unpacking"),
        pytest.param(lambda items: items[:], id="slice"),
        pytest.param(lambda items: items[::-2] + items[-2::-2], id="step slices"),
        pytest.param(lambda items: list(reversed(items)), id="reversed"),
        pytest.param(lambda items: items.copy(), id="copy()"),
        pytest.param(copy.copy, id="copy.copy"),
        pytest.param(lambda items: [] + items, id="plain + items"),  # noqa: RUF005
        pytest.param(lambda items: items + [], id="items + plain"),  # noqa: RUF005
        pytest.param(lambda items: items * 2, id="items * 2"),
        pytest.param(lambda items: 2 * items, id="2 * items"),
        pytest.param(lambda items: sorted(items, key=lambda item: -item["n"]), id="sorted"),
        pytest.param(lambda items: dict(enumerate(items)).values(), id="enumerate"),
        pytest.param(lambda items: sum([items], []), id="sum"),  # noqa: RUF017
        pytest.param(lambda items: extended([], items), id="plain.extend"),
        pytest.param(lambda items: slice_assigned([], items), id="plain[:] = items"),
        pytest.param(lambda items: [items.pop() for _ in range(len(items))], id="pop()"),
        pytest.param(lambda items: [items.pop(0) for _ in range(len(items))], id="pop(0)"),
    ],
)
def test_every_way_of_reading_hands_out_copies_shared_with_the_list(read: Any) -> None:
    elements = source()
    snapshot = copy.deepcopy(elements)
    items = copy_on_read(elements)

    got = list(read(items))

    assert got
    assert not any(is_source_element(item, elements) for item in got)
    assert not any(is_source_element(item, elements) for item in raw(items))
    for item in got:
        item["tags"].append("changed")
        item["nested"]["deep"].clear()
    assert elements == snapshot
    # What was read is in the list: it is the list's copy, as with a list copied up front.
    for item in raw(items):
        assert item["tags"][-1] == "changed"


def test_sort_gives_the_key_copies() -> None:
    elements = source()
    snapshot = copy.deepcopy(elements)
    items = copy_on_read(elements)
    seen: list[Item] = []

    def key(item: Item) -> int:
        seen.append(item)
        item["tags"].append("seen by the key")
        return -int(item["n"])

    items.sort(key=key)

    assert elements == snapshot
    assert not any(is_source_element(item, elements) for item in seen)
    assert [item["n"] for item in items] == [4, 3, 2, 1, 0]


def test_a_deep_copy_or_a_pickle_is_detached_and_reads_nothing() -> None:
    elements = source()
    items = copy_on_read(elements)
    items[0]["tags"].append("read")

    for detached in (
        copy.deepcopy(items),
        pickle.loads(pickle.dumps(items)),
        items.__reduce_ex__(2)[1][0],
        items.__reduce__()[1][0],
    ):
        assert type(detached) is list
        assert detached == items
        assert not any(item is slot for item, slot in zip(detached, raw(items), strict=True))
    assert all(slot is element for slot, element in zip(raw(items)[1:], elements[1:], strict=True))


def test_writes_are_the_writers_and_moves_keep_track_of_the_source_elements() -> None:
    elements = source()
    snapshot = copy.deepcopy(elements)
    items = copy_on_read(elements)
    mine: Item = {"n": 99, "tags": [], "nested": {}}

    items.insert(0, mine)  # every source element moves one slot on
    items.reverse()
    items.reverse()
    del items[1]  # element 0
    items[1] = {"n": 98, "tags": [], "nested": {}}  # element 1
    items.append(mine)
    same = items
    items += [{"n": 97, "tags": [], "nested": {}}]
    items *= 1
    assert items is same  # in place, as on a list
    items.remove({"n": 97, "tags": [], "nested": {}})
    items.extend(items[-1:])

    assert items[0] is mine
    assert items[5] is mine
    assert items[6] is mine
    assert [item["n"] for item in items] == [99, 98, 2, 3, 4, 99, 99]
    for item in items:
        item["tags"].append("changed")
    assert elements == snapshot


def test_an_element_in_two_slots_is_copied_once() -> None:
    elements = source(2)
    items = copy_on_read(elements)
    items *= 2  # list's own repeat: it copies the slots without reading them
    assert raw(items)[0] is elements[0]
    assert raw(items)[2] is elements[0]
    assert items[0] is items[2]
    assert items[3] is items[1]
    assert items[0] is not elements[0]


def test_iteration_sees_changes_made_during_the_loop_as_a_list_does() -> None:
    items = copy_on_read(source(3))
    seen = []
    for item in items:
        seen.append(item["n"])
        if item["n"] == 0:
            items.append({"n": 3, "tags": [], "nested": {}})
    assert seen == [0, 1, 2, 3]
    backwards = [item["n"] for item in reversed(items)]
    assert backwards == [3, 2, 1, 0]


def test_raw_reads_only_compare() -> None:
    elements = source()
    items = copy_on_read(elements)
    assert items == elements
    assert elements[3] in items
    assert items.index(elements[3]) == 3
    assert items.count(elements[3]) == 1
    assert repr(items) == repr(elements)
    assert all(slot is element for slot, element in zip(raw(items), elements, strict=True))


def test_json_reads_through_the_list() -> None:
    elements = source()
    items = copy_on_read(elements)
    assert json.loads(json.dumps(items)) == elements


def test_adding_to_a_tuple_stays_a_type_error() -> None:
    items = copy_on_read(source(1))
    with pytest.raises(TypeError):
        (1,) + items  # type: ignore[operator]  # noqa: RUF005


def test_indexing_errors_are_lists_errors() -> None:
    items = copy_on_read(source(1))
    with pytest.raises(IndexError):
        items[1]
    with pytest.raises(IndexError):
        copy_on_read(source(0)).pop()
    with pytest.raises(TypeError):
        items["0"]  # type: ignore[call-overload]


def test_anything_but_a_plain_list_is_copied_at_once() -> None:
    elements = source(2)
    items = copy_on_read(elements)
    again = copy_on_read(items)
    assert type(again) is list
    assert again == elements
    assert not any(item is slot for item, slot in zip(again, raw(items), strict=True))


def test_copy_payload_makes_deep_copies() -> None:
    class Leaf:
        def __init__(self) -> None:
            self.seen = [1]

    leaf = Leaf()
    value: dict[str, Any] = {
        "list": [1, "a", None, 2.5, b"x", {"k": [True]}],
        "leaf": leaf,
        "tuple": ([1],),
    }
    copied = copy_payload(value)
    assert copied["list"] == value["list"]
    assert copied["tuple"] == value["tuple"]
    assert copied["leaf"].seen == [1]
    assert copied["list"] is not value["list"]
    assert copied["list"][5] is not value["list"][5]
    assert copied["leaf"] is not leaf
    assert copied["tuple"][0] is not value["tuple"][0]
    cycle: list[Any] = []
    cycle.append(cycle)
    copied_cycle = copy_payload(cycle)
    assert copied_cycle[0] is copied_cycle
