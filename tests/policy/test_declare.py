"""``@middleware`` and ``MiddlewareDef``: what a declaration accepts, refuses and records."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from stageware.policy import (
    Band,
    Block,
    Continue,
    FailMode,
    HookPoint,
    MiddlewareDef,
    PolicyEnv,
    SpecError,
    ToolCallEvent,
    middleware,
)

# For arguments built at run time, past the typed overloads.
untyped: Any = middleware


async def allow(event: Any, env: PolicyEnv) -> None:
    """Let everything through.

    A second paragraph the description leaves out.
    """


class Limits(BaseModel):
    limit: int
    currency: str = "EUR"


class RefundLimit:
    """Block refunds over a limit."""

    def __init__(self, config: Limits) -> None:
        self.config = config

    async def __call__(self, event: ToolCallEvent, env: PolicyEnv) -> Block | None:
        if event.input.get("amount", 0) > self.config.limit:
            return Block(f"over {self.config.limit} {self.config.currency}")
        return None


class NoConfig:
    async def __call__(self, event: Any, env: PolicyEnv) -> Continue:
        return Continue()


def test_a_function_declaration_records_the_spec_fields() -> None:
    declared = middleware(hooks=["tool.before", HookPoint.TOOL_AFTER], fail_mode="closed")(allow)
    assert isinstance(declared, MiddlewareDef)
    assert declared.name == "allow"
    assert declared.target is allow
    assert declared.hooks == (HookPoint.TOOL_BEFORE, HookPoint.TOOL_AFTER)
    assert declared.band is Band.APP
    assert declared.fail_mode is FailMode.CLOSED
    assert declared.timeout is None
    assert declared.config is None
    assert declared.description == "Let everything through."
    assert declared.build() is allow
    with pytest.raises(AttributeError):
        declared.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("given", "seconds"),
    [
        ("250ms", 0.25),
        ("2s", 2.0),
        ("1.5m", 90.0),
        ("1h", 3600.0),
        (" 2 s ", 2.0),
        ("PT2S", 2.0),
        ("PT0.25S", 0.25),
        ("P1DT2H", 93600.0),
        ("PT1M", 60.0),
        ("P1W", 604800.0),
        (3, 3.0),
        (0.5, 0.5),
        (timedelta(seconds=7), 7.0),
    ],
)
def test_timeouts_in_every_documented_form(given: Any, seconds: float) -> None:
    declared = middleware(hooks=["run.start"], fail_mode="open", timeout=given)(allow)
    assert declared.timeout == timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"hooks": ["tool.befor"]}, "did you mean 'tool.before'"),
        ({"hooks": []}, "hooks is empty"),
        ({"fail_mode": "clsoed"}, "did you mean 'closed'"),
        ({"band": "guardrial"}, "did you mean 'guardrail'"),
        ({"band": "baseline"}, "only the org baseline profile"),
        ({"timeout": 0}, "positive"),
        ({"timeout": "-2s"}, "cannot read '-2s'"),
        ({"timeout": "2 weeks"}, "cannot read '2 weeks'"),
        ({"timeout": "PT2X"}, "cannot read 'PT2X'"),
        ({"timeout": "-PT2S"}, "positive"),
        ({"timeout": "P1M"}, "'P1M' counts years or months"),
        ({"timeout": "P1Y2DT3H"}, "'P1Y2DT3H' counts years or months"),
        ({"timeout": "10:00"}, "cannot read '10:00'"),
        ({"timeout": timedelta(0)}, "positive"),
        ({"name": "has space"}, "dotted identifier"),
        ({"name": "a:b"}, "dotted identifier"),
    ],
)
def test_bad_declarations_are_value_errors_naming_the_value(
    kwargs: dict[str, Any], message: str
) -> None:
    arguments: dict[str, Any] = {"hooks": ["tool.before"], "fail_mode": "closed", **kwargs}
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        untyped(**arguments)(allow)


def test_the_fail_mode_is_required_and_keyword_only() -> None:
    with pytest.raises(TypeError, match="required keyword-only argument: 'fail_mode'"):
        middleware(hooks=["tool.before"])(allow)  # type: ignore[operator]
    with pytest.raises(TypeError, match="positional"):
        untyped(["tool.before"], "closed")


def test_a_hooks_string_instead_of_a_list_is_refused() -> None:
    with pytest.raises(TypeError, match="not the string"):
        middleware(hooks="tool.before", fail_mode="open")  # type: ignore[call-overload]


def sync_policy(event: Any, env: PolicyEnv) -> None:
    return None


async def generator_policy(event: Any, env: PolicyEnv) -> Any:
    yield None


class SyncCall:
    def __call__(self, event: Any, env: PolicyEnv) -> None:
        return None


@pytest.mark.parametrize("target", [sync_policy, generator_policy, SyncCall, 42])
def test_targets_that_are_not_async_callables_are_type_errors(target: Any) -> None:
    with pytest.raises(TypeError, match="async"):
        middleware(hooks=["tool.before"], fail_mode="open")(target)


def test_a_class_with_a_config_is_built_with_validated_settings() -> None:
    declared = middleware(
        hooks=["tool.before"], fail_mode="closed", config=Limits, sample={"limit": 100}
    )(RefundLimit)
    assert declared.description == "Block refunds over a limit."
    assert declared.sample == {"limit": 100}
    handler = declared.build({"limit": 5, "currency": "USD"})
    assert isinstance(handler.__self__, RefundLimit)  # type: ignore[attr-defined]
    assert handler.__self__.config == Limits(limit=5, currency="USD")  # type: ignore[attr-defined]


def test_invalid_settings_are_a_spec_error_with_the_pydantic_locations() -> None:
    declared = middleware(hooks=["tool.before"], fail_mode="closed", config=Limits)(RefundLimit)
    with pytest.raises(SpecError) as caught:
        declared.build({"limit": "lots", "currency": 3})
    assert caught.value.middleware == "RefundLimit"
    assert caught.value.locations == (("limit",), ("currency",))
    assert "limit: Input should be a valid integer" in str(caught.value)


def test_settings_for_a_middleware_without_config_are_a_spec_error() -> None:
    declared = middleware(hooks=["tool.before"], fail_mode="open")(NoConfig)
    assert isinstance(declared.build().__self__, NoConfig)  # type: ignore[attr-defined]
    with pytest.raises(SpecError, match="takes no settings"):
        declared.build({"limit": 1})
    function = middleware(hooks=["tool.before"], fail_mode="open")(allow)
    with pytest.raises(SpecError, match="takes no settings"):
        function.build({"x": 1})


def test_the_sample_is_validated_at_declaration() -> None:
    with pytest.raises(SpecError, match=r"invalid sample for middleware 'RefundLimit'"):
        middleware(hooks=["tool.before"], fail_mode="closed", config=Limits, sample={})(RefundLimit)


def test_a_function_cannot_take_a_config() -> None:
    with pytest.raises(TypeError, match="cannot take settings"):
        middleware(hooks=["tool.before"], fail_mode="closed", config=Limits)(allow)


def test_name_overrides_the_target_name() -> None:
    declared = middleware(hooks=["run.end"], fail_mode="open", name="audit.allow")(allow)
    assert declared.name == "audit.allow"
    assert declared.with_name("acme.audit").name == "acme.audit"
