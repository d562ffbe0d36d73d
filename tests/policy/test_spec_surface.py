"""Every name the policy spec document lists exists, with the spec's signature."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from enum import StrEnum

from pydantic import BaseModel

import stageware.policy as policy
from stageware.policy import Band, HookPoint, MiddlewareDef


def test_the_spec_names_are_exported() -> None:
    names = {
        "middleware", "MiddlewareDef", "FailMode", "Continue", "Block", "Suspend", "Escalate",
        "Retry", "HookPoint", "Band", "Direction", "HookEvent", "SpecError", "load_policy",
        "PolicyEngine", "RunStartEvent", "InputEvent", "RouteEvent", "ContextEvent",
        "ModelRequestEvent", "ModelResponseEvent", "StreamChunkEvent", "ToolCallEvent",
        "ToolResultEvent", "OutputEvent", "ApprovalResolvedEvent", "RunErrorEvent",
        "RunEndEvent",
    }  # fmt: skip
    assert names <= set(policy.__all__)
    for name in policy.__all__:
        assert hasattr(policy, name), name


def test_middleware_takes_the_spec_parameters() -> None:
    parameters = inspect.signature(policy.middleware).parameters
    assert list(parameters) == [
        "hooks", "fail_mode", "band", "timeout", "name", "config", "sample",
    ]  # fmt: skip
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters.values())
    assert parameters["hooks"].default is inspect.Parameter.empty
    assert parameters["fail_mode"].default is inspect.Parameter.empty
    assert parameters["band"].default is Band.APP
    for optional in ("timeout", "name", "config", "sample"):
        assert parameters[optional].default is None


def test_middleware_def_has_the_spec_fields_in_order() -> None:
    assert dataclasses.is_dataclass(MiddlewareDef)
    fields = [(f.name, f.default) for f in dataclasses.fields(MiddlewareDef)]
    assert fields == [
        ("name", dataclasses.MISSING),
        ("target", dataclasses.MISSING),
        ("hooks", dataclasses.MISSING),
        ("band", dataclasses.MISSING),
        ("fail_mode", dataclasses.MISSING),
        ("timeout", dataclasses.MISSING),
        ("config", None),
        ("description", None),
        ("sample", None),
    ]
    assert MiddlewareDef.__dataclass_params__.frozen  # type: ignore[attr-defined]
    # The spec's build(settings), and beyond it only keyword-only parameters with defaults
    # (settings_dir, the spec loader's), so that every call the spec shows still works.
    build = inspect.signature(MiddlewareDef.build).parameters
    assert list(build)[:2] == ["self", "settings"]
    extra = list(build.values())[2:]
    assert [(p.name, p.kind, p.default) for p in extra] == [
        ("settings_dir", inspect.Parameter.KEYWORD_ONLY, None)
    ]


def test_enums_and_outcomes_have_the_spec_shape() -> None:
    for enum in (policy.HookPoint, policy.Band, policy.Direction, policy.FailMode):
        assert issubclass(enum, StrEnum)
    assert [band.value for band in Band] == ["baseline", "guardrail", "platform", "app"]
    assert len(HookPoint) == 13
    base = policy.Continue.__mro__[1]
    assert base.__name__ == "_Outcome"
    for outcome in (policy.Block, policy.Suspend, policy.Escalate, policy.Retry):
        assert outcome.__mro__[1] is base


def test_hook_event_is_the_discriminated_union_of_the_13_events() -> None:
    origin, *metadata = typing.get_args(policy.HookEvent)
    members = set(typing.get_args(origin))
    assert len(members) == 13
    assert all(issubclass(member, BaseModel) for member in members)
    assert {member.model_fields["hook"].default for member in members} == {
        point.value for point in HookPoint
    }
    assert metadata[0].discriminator == "hook"
