"""The events the conformance suite feeds a middleware: valid, varied, the same every run,
and read off whatever the event models declare, so that a schema change needs no change.
"""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal, NotRequired

from hypothesis import HealthCheck, given, settings
from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypeAliasType, TypedDict

from stageware._policy.conformance._examples import examples_for
from stageware.conformance import DEFAULT_EXAMPLES, event_strategy, model_strategy
from stageware.policy import HOOK_POINTS, HookPoint


def test_every_hook_point_gets_valid_events_of_its_model() -> None:
    for point, spec in HOOK_POINTS.items():
        examples = examples_for(point, DEFAULT_EXAMPLES)
        assert len(examples) == DEFAULT_EXAMPLES, point
        for example in examples:
            assert type(example.event) is spec.event
            dumped = example.event.model_dump(by_alias=True)
            assert spec.event.model_validate(dumped) == example.event
            assert dumped["hook"] == point.value


def test_the_events_vary() -> None:
    for point in HookPoint:
        dumped = {e.event.model_dump_json() for e in examples_for(point, DEFAULT_EXAMPLES)}
        assert len(dumped) > DEFAULT_EXAMPLES // 2, point


def test_the_events_are_the_same_on_every_draw_shortest_first() -> None:
    def draw() -> list[str]:
        examples_for.cache_clear()
        return [e.event.model_dump_json() for e in examples_for(HookPoint.TOOL_AFTER, 10)]

    first = draw()

    assert draw() == first
    assert [len(text) for text in first] == sorted(len(text) for text in first)


def test_env_varies_only_where_the_hook_can_see_it_vary() -> None:
    retried = examples_for(HookPoint.TOOL_AFTER, DEFAULT_EXAMPLES)
    first_try = examples_for(HookPoint.TOOL_BEFORE, DEFAULT_EXAMPLES)

    assert {e.attempt for e in retried} > {1}
    assert {e.attempt for e in first_try} == {1}
    assert {e.session_id is None for e in first_try} == {True, False}


# A model of the kind a changed schema could produce, with everything the reader handles.


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Block(TypedDict):
    text: NotRequired[str]
    count: NotRequired[int]
    kind: Literal["a", "b"]


class Loose(TypedDict, total=False):
    note: str


class Node(TypedDict):
    children: list[Node]
    value: NotRequired[int]


Score = TypeAliasType("Score", float)


class Inner(BaseModel):
    json_: dict[str, Any] = Field(alias="json")


class Changed(BaseModel):
    model_config = ConfigDict(extra="forbid")

    hook: Literal["changed"] = "changed"
    blocks: list[Block]
    loose: Loose
    tree: Node
    colour: Colour
    at_least_ten: Annotated[int, Field(ge=10)]
    pair: tuple[str, bool]
    inner: Inner | None = None
    scores: dict[str, list[Score]] = Field(default_factory=dict)
    anything: Any = None


def test_a_model_of_any_shape_gets_valid_instances() -> None:
    seen: list[Changed] = []

    @settings(
        max_examples=40,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
    )
    @given(model_strategy(Changed))
    def collect(instance: Changed) -> None:
        assert Changed.model_validate(instance.model_dump(by_alias=True)) == instance
        seen.append(instance)

    collect()

    blocks = [block for instance in seen for block in instance.blocks]
    # NotRequired keys are read as such (under `from __future__ import annotations` the
    # TypedDict itself says they are required): some blocks have them, some do not.
    assert {"text" in block for block in blocks} == {True, False}
    assert all("kind" in block for block in blocks)
    assert {"note" in instance.loose for instance in seen} == {True, False}
    assert min(instance.at_least_ten for instance in seen) >= 10
    assert {instance.inner is None for instance in seen} == {True, False}
    assert {bool(instance.tree["children"]) for instance in seen} == {True, False}
    assert {instance.colour for instance in seen} == set(Colour)


def test_event_strategy_names_a_hook_point_by_its_value() -> None:
    assert event_strategy("tool.before") is event_strategy(HookPoint.TOOL_BEFORE)
