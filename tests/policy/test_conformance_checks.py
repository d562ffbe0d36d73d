"""The conformance suite catches each kind of broken middleware, and passes good ones.

Each broken middleware below breaks one rule, the way an author could by mistake; each
test shows the suite names it, the hook point, the check and the event. The suite runs
its own event loop, so these tests are synchronous; ``backend`` picks the loop.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

import stageware._policy.conformance._suite as suite_module
from stageware._demo.policy._middleware import csat_survey
from stageware._policy.conformance._failures import event_json
from stageware.conformance import (
    Check,
    ConformanceError,
    ConformanceFailure,
    assert_conforms,
    check_middleware,
)
from stageware.policy import (
    ALLOWED,
    Block,
    Continue,
    Escalate,
    HookPoint,
    InputEvent,
    Outcome,
    PolicyEnv,
    Retry,
    Suspend,
    ToolCallEvent,
    ToolResultEvent,
    middleware,
)

BACKENDS = ["asyncio", "trio"]


def _only(failures: list[ConformanceFailure]) -> ConformanceFailure:
    assert len(failures) == 1, failures
    return failures[0]


# Outcomes a hook point does not allow.


@middleware(hooks=["run.start"], fail_mode="closed")
async def retries_at_run_start(event: Any, env: PolicyEnv) -> Outcome:
    return Retry("try the run again")


@middleware(hooks=["tool.after"], fail_mode="closed")
async def suspends_after_the_tool(event: Any, env: PolicyEnv) -> Outcome:
    return Suspend("check the refund")


@middleware(hooks=["run.end"], fail_mode="open")
async def modifies_at_run_end(event: Any, env: PolicyEnv) -> Outcome:
    return Continue(modified=event)


def test_an_outcome_the_hook_does_not_allow_fails() -> None:
    failure = _only(check_middleware(retries_at_run_start))

    assert failure.middleware == "retries_at_run_start"
    assert failure.hook is HookPoint.RUN_START
    assert failure.check is Check.OUTCOME
    assert failure.message == (
        "returned Retry, which run.start does not allow "
        "(allowed there: Continue, Block, Suspend, Escalate)"
    )
    assert failure.event is not None
    assert json.loads(failure.event)["hook"] == "run.start"


def test_suspend_after_the_tool_ran_fails() -> None:
    failure = _only(check_middleware(suspends_after_the_tool))

    assert (failure.hook, failure.check) == (HookPoint.TOOL_AFTER, Check.OUTCOME)
    assert "returned Suspend, which tool.after does not allow" in failure.message


def test_a_modification_where_nothing_may_change_fails() -> None:
    failure = _only(check_middleware(modifies_at_run_end))

    assert failure.check is Check.OUTCOME
    assert "returned Continue(modified=...), but run.end lets a policy change nothing" in (
        failure.message
    )


def test_every_declared_hook_is_checked_against_its_row_of_the_table() -> None:
    @middleware(hooks=list(HookPoint), fail_mode="closed")
    async def always_retries(event: Any, env: PolicyEnv) -> Outcome:
        return Retry("again")

    failures = check_middleware(always_retries, examples=3)

    assert {f.hook for f in failures} == {p for p in HookPoint if Retry not in ALLOWED[p]}
    assert {f.check for f in failures} == {Check.OUTCOME}
    for failure in failures:
        assert failure.event is not None
        assert json.loads(failure.event)["hook"] == failure.hook


# A return value that is not an outcome, or an outcome with bad fields.


@pytest.mark.parametrize(
    ("returned", "shown"),
    [("allow", "'allow' (a str)"), (True, "True (a bool)"), (Block, "(a type)")],
)
def test_a_return_value_that_is_not_an_outcome_fails(returned: object, shown: str) -> None:
    @middleware(hooks=["tool.before"], fail_mode="closed", name="says_allow")
    async def says_allow(event: Any, env: PolicyEnv) -> Any:
        return returned

    failure = _only(check_middleware(says_allow))

    assert failure.check is Check.OUTCOME
    assert shown in failure.message
    assert "which is not an outcome: return None, Continue(), Block(...)" in failure.message


@pytest.mark.parametrize(
    ("outcome", "problem"),
    [
        (Block(""), "returned Block with reason ''"),
        (Suspend("approve?", details={"at": time}), "returned Suspend with details that are not"),
    ],
)
def test_an_outcome_with_fields_the_trace_cannot_keep_fails(outcome: Outcome, problem: str) -> None:
    @middleware(hooks=["tool.before"], fail_mode="closed")
    async def careless(event: Any, env: PolicyEnv) -> Outcome:
        return outcome

    failure = _only(check_middleware(careless))

    assert failure.check is Check.OUTCOME
    assert failure.message.startswith(problem)


# Timeouts, on both event loops.


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_middleware_that_sleeps_past_its_timeout_fails(backend: Any) -> None:
    @middleware(hooks=["tool.before", "tool.after"], fail_mode="closed", timeout="50ms")
    async def slow_limits(event: Any, env: PolicyEnv) -> None:
        await anyio.sleep(10)

    started = time.monotonic()
    failures = check_middleware(slow_limits, backend=backend)

    assert [(f.hook, f.check) for f in failures] == [
        (HookPoint.TOOL_BEFORE, Check.TIMEOUT),
        (HookPoint.TOOL_AFTER, Check.TIMEOUT),
    ]
    assert failures[0].message == "did not return within its 0.05s timeout"
    # One timeout per hook, not one per example.
    assert time.monotonic() - started < 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_middleware_that_swallows_the_timeout_still_fails(backend: Any) -> None:
    @middleware(hooks=["tool.before"], fail_mode="closed", timeout="50ms")
    async def stubborn(event: Any, env: PolicyEnv) -> None:
        try:
            await anyio.sleep(0.2)
        except anyio.get_cancelled_exc_class():
            return None

    assert _only(check_middleware(stubborn, backend=backend)).check is Check.TIMEOUT


def test_a_middleware_that_blocks_the_event_loop_past_its_timeout_fails() -> None:
    @middleware(hooks=["tool.before"], fail_mode="closed", timeout="20ms")
    async def blocking(event: Any, env: PolicyEnv) -> None:
        time.sleep(0.03)

    failure = _only(check_middleware(blocking))

    assert failure.check is Check.TIMEOUT
    assert failure.message.startswith("took 0.0")
    assert failure.message.endswith("s, over its 0.02s timeout")


def test_without_a_declared_timeout_the_suite_has_its_own_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(suite_module, "UNDECLARED_TIMEOUT", 0.05)

    @middleware(hooks=["run.end"], fail_mode="open")
    async def hangs(event: Any, env: PolicyEnv) -> None:
        await anyio.sleep_forever()

    failure = _only(check_middleware(hangs))

    assert failure.check is Check.TIMEOUT
    assert failure.message == (
        "did not return within the suite's 0.05s limit (it declares no timeout)"
    )


# Mutating the event in place.


@middleware(hooks=["input.received"], fail_mode="closed")
async def keeps_the_last_message(event: InputEvent, env: PolicyEnv) -> Outcome:
    del event.messages[:-1]
    return Continue(modified=event)


@middleware(hooks=["tool.before"], fail_mode="closed")
async def renames_the_tool(event: ToolCallEvent, env: PolicyEnv) -> None:
    event.tool_name = "refund_v2"


@middleware(hooks=["tool.before"], fail_mode="closed")
async def caps_the_amount(event: ToolCallEvent, env: PolicyEnv) -> None:
    # Only an input that is an object is touched, so the first (shortest) events pass.
    if isinstance(event.input, dict):
        event.input["amount"] = 100


@pytest.mark.parametrize(
    ("mutating", "field"),
    [
        (keeps_the_last_message, "messages"),
        (renames_the_tool, "tool_name"),
        (caps_the_amount, "input"),
    ],
)
def test_changing_the_event_in_place_fails(mutating: Any, field: str) -> None:
    failure = _only(check_middleware(mutating))

    assert failure.check is Check.MUTATION
    assert failure.message.startswith(f"changed its input event in place ({field}); ")
    assert "event.model_copy(update=...)" in failure.message


def test_the_failure_shows_the_event_before_the_change() -> None:
    failure = _only(check_middleware(caps_the_amount))

    assert failure.event is not None
    shown = json.loads(failure.event)
    assert isinstance(shown["input"], dict)
    assert shown["input"].get("amount") != 100


# An invalid Continue(modified=...).


@middleware(hooks=["tool.after"], fail_mode="closed")
async def garbles_the_result(event: ToolResultEvent, env: PolicyEnv) -> Outcome:
    return Continue(modified={"result": {**event.result, "status": 3}})


@middleware(hooks=["tool.after"], fail_mode="closed")
async def renames_in_the_copy(event: ToolResultEvent, env: PolicyEnv) -> Outcome:
    return Continue(modified=event.model_copy(update={"tool_name": "other"}))


@middleware(hooks=["tool.after"], fail_mode="closed")
async def modifies_with_text(event: ToolResultEvent, env: PolicyEnv) -> Outcome:
    return Continue(modified="redacted")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("broken", "problem"),
    [
        (garbles_the_result, "modified is not a valid ToolResultEvent: result.status: "),
        (renames_in_the_copy, "modified changes tool_name, which tool.after does not let"),
        (modifies_with_text, "modified must be a ToolResultEvent or a mapping of its fields"),
    ],
)
def test_an_invalid_modified_fails(broken: Any, problem: str) -> None:
    failure = _only(check_middleware(broken))

    assert failure.check is Check.MODIFIED
    assert failure.message.startswith(f"returned an invalid Continue(modified=...): {problem}")


# Crashing, and failing to build.


@middleware(hooks=["tool.before"], fail_mode="closed")
async def reads_the_amount(event: ToolCallEvent, env: PolicyEnv) -> Outcome | None:
    # Assumes every input is {"amount": ...}; generated events say otherwise.
    return Block("too much") if event.input["amount"] > 100 else None


def test_a_timeout_error_the_middleware_raises_itself_is_a_crash() -> None:
    @middleware(hooks=["tool.before"], fail_mode="closed", timeout="1s")
    async def limits_service_timed_out(event: Any, env: PolicyEnv) -> None:
        raise TimeoutError("the limits service did not answer")

    failure = _only(check_middleware(limits_service_timed_out))

    assert failure.check is Check.CRASH
    assert failure.message == "raised TimeoutError: the limits service did not answer"


def test_a_middleware_that_raises_fails() -> None:
    failure = _only(check_middleware(reads_the_amount))

    assert failure.check is Check.CRASH
    # Whichever comes first: an input that is not an object, or one without "amount".
    assert re.match(r"raised (TypeError|KeyError): ", failure.message)


class Limits(BaseModel):
    max_amount: int


class UnsampledLimit:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits

    async def __call__(self, event: ToolCallEvent, env: PolicyEnv) -> None:
        return None


# Applied as a call: mypy does not let a class decorator change what the name is.
unsampled_limit = middleware(hooks=["tool.before"], fail_mode="closed", config=Limits)(
    UnsampledLimit
)


def test_a_middleware_that_cannot_be_built_fails() -> None:
    failure = _only(check_middleware(unsampled_limit))

    assert (failure.hook, failure.check, failure.event) == (None, Check.BUILD, None)
    assert failure.message.startswith("could not be built with its sample settings: SpecError")
    assert "max_amount" in failure.message
    assert failure.message.endswith(
        "declare sample=... in @middleware(...) so that the suite can build it"
    )


def test_settings_given_to_the_suite_replace_the_sample() -> None:
    assert check_middleware(unsampled_limit, settings={"max_amount": 10}) == []
    failure = _only(check_middleware(unsampled_limit, settings={"max_amount": "many"}))
    assert failure.message.startswith("could not be built with the settings given")


# Well-behaved middleware pass.


@middleware(hooks=["input.received", "tool.before", "run.end"], fail_mode="open", timeout="1s")
async def redacts_emails(event: Any, env: PolicyEnv) -> Outcome | None:
    """Replaces the text of user messages, building new ones; looks at everything else."""
    env.logger.debug("checking %s", env.hook)
    if isinstance(event, InputEvent):
        messages = [
            {**message, "content": [{"text": "[redacted]"} for _ in message["content"]]}
            for message in event.messages
        ]
        return Continue(modified={"messages": messages})
    if isinstance(event, ToolCallEvent) and event.tool_name == "wire_money":
        return Block("no wires")
    return None


class RefundLimit(BaseModel):
    max_amount: int
    queue: str = "refunds"


class RefundGuard:
    """Suspends a large refund, escalates a failed one, retries one that errored twice."""

    def __init__(self, limits: RefundLimit) -> None:
        self.limits = limits

    async def __call__(self, event: Any, env: PolicyEnv) -> Outcome | None:
        await anyio.sleep(0)
        if isinstance(event, ToolCallEvent):
            amount = event.input.get("amount") if isinstance(event.input, dict) else None
            if isinstance(amount, int) and amount > self.limits.max_amount:
                return Suspend(f"refund of {amount}", details={"amount": amount})
            return Continue(modified={"input": {"checked": True}})
        if event.error is not None:
            if env.attempt <= 2:
                return Retry("the tool failed")
            return Escalate("a refund failed twice", queue=self.limits.queue)
        return None


refund_guard = middleware(
    hooks=["tool.before", "tool.after"],
    fail_mode="closed",
    timeout="2s",
    config=RefundLimit,
    sample={"max_amount": 100},
)(RefundGuard)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("good", [redacts_emails, refund_guard], ids=["function", "class"])
def test_well_behaved_middleware_pass(good: Any, backend: Any) -> None:
    assert check_middleware(good, backend=backend) == []
    assert_conforms(good, backend=backend)


def test_assert_conforms_raises_with_every_failure() -> None:
    with pytest.raises(ConformanceError) as raised:
        assert_conforms(suspends_after_the_tool)

    assert raised.value.failures == tuple(check_middleware(suspends_after_the_tool))
    text = str(raised.value)
    assert text.startswith("1 conformance failure:\n- suspends_after_the_tool at tool.after: ")
    assert "\n    event: {" in text


# The suite's own arguments.


def test_hooks_selects_among_the_declared_ones() -> None:
    failures = check_middleware(renames_the_tool, hooks=["tool.before"])
    assert [f.hook for f in failures] == [HookPoint.TOOL_BEFORE]

    with pytest.raises(
        ValueError, match=r"does not declare tool\.after \(it declares tool\.before\)"
    ):
        check_middleware(renames_the_tool, hooks=["tool.after"])
    with pytest.raises(ValueError, match=r"did you mean 'tool\.before'"):
        check_middleware(renames_the_tool, hooks=["tool.befor"])
    with pytest.raises(ValueError, match="examples must be at least 1"):
        check_middleware(renames_the_tool, examples=0)


def test_the_same_failure_on_every_run() -> None:
    assert check_middleware(caps_the_amount) == check_middleware(caps_the_amount)


def test_a_long_event_is_cut_in_the_middle() -> None:
    messages = [{"role": "user", "content": [{"text": f"message {n}"}]} for n in range(50)]
    event = InputEvent.model_validate({"run_id": "r1", "messages": messages})

    shown = event_json(event)

    assert len(shown) < 600 < len(event.model_dump_json())
    assert shown.startswith('{"hook": "input.received", "run_id": "r1", "messages": [')
    assert '"message 49"' in shown[-200:]
    assert shown.endswith("]}")
    assert " characters cut] ... " in shown


# Events the author gives, to reach the branches generated events miss.


@middleware(hooks=["tool.before"], fail_mode="closed", timeout="2s")
async def refund_limits(event: ToolCallEvent, env: PolicyEnv) -> Outcome | None:
    amount = event.input.get("amount", 0) if event.tool_name == "refund" else 0
    return Block(f"refund of {amount} is over the limit") if amount > 1000 else None


def _refund(tool_input: object) -> ToolCallEvent:
    return ToolCallEvent(run_id="r1", tool_name="refund", tool_use_id="t1", input=tool_input)


def test_given_events_reach_the_branches_generated_ones_miss() -> None:
    assert check_middleware(refund_limits) == []
    assert check_middleware(refund_limits, events=[_refund({"amount": 5000})]) == []

    failure = _only(check_middleware(refund_limits, events=[_refund(["5000"])]))

    assert failure.check is Check.CRASH
    assert failure.message == "raised AttributeError: 'list' object has no attribute 'get'"
    assert failure.event is not None
    assert json.loads(failure.event)["input"] == ["5000"]


def test_a_given_event_must_belong_to_a_declared_hook() -> None:
    event = InputEvent(run_id="r1", messages=[])
    with pytest.raises(ValueError, match=r"an event of input\.received was given, but middleware"):
        check_middleware(refund_limits, events=[event])


def test_the_demo_survey_crashes_when_its_service_is_down() -> None:
    thanks = InputEvent(
        run_id="r1", messages=[{"role": "user", "content": [{"text": "Thanks a lot!"}]}]
    )
    down = {"endpoint": "https://surveys.example"}

    assert check_middleware(csat_survey, events=[thanks]) == []
    failure = _only(check_middleware(csat_survey, settings=down, events=[thanks]))

    assert failure.check is Check.CRASH
    assert failure.message == (
        "raised ConnectionError: survey service https://surveys.example is unreachable"
    )
