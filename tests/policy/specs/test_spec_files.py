"""Policy spec files that are valid: what they install, in which order, with which settings.

The middleware come from the acme-policies plugin, installed for real (``conftest``), and
from modules the spec names as ``module:attribute``, written into the test's directory.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from stageware import Agent, ScriptedModel, ScriptedToolCall, ScriptedTurn, tool
from stageware.policy import (
    DEFAULT_RETRY_BUDGET,
    Band,
    FailMode,
    HookPoint,
    PolicyEngine,
    load_policy,
    read_policy,
)

from .conftest import WriteFile

pytestmark = pytest.mark.usefixtures("plugins")

APP_MODULE = """
from typing import Any

from stageware.policy import PolicyEnv, middleware


@middleware(hooks=["model.response", "output.final"], fail_mode="open", band="platform")
async def tone(event: Any, env: PolicyEnv) -> None:
    '''Checks the tone of answers.'''


class Holder:
    @middleware(hooks=["run.start"], fail_mode="closed", name="greeting")
    async def greet(event: Any, env: PolicyEnv) -> None:
        '''Greets the run.'''
"""


def test_a_spec_installs_its_middleware_with_what_it_says(write: WriteFile) -> None:
    path = write(
        "policy.yaml",
        """
        version: 1
        middleware:
          - use: acme.refund_limit
            band: guardrail
            settings: {limit: 300, currency: USD}
            timeout: 250ms
          - use: acme.audit_tools
            hooks: [tool.after]
            fail_mode: closed
        """,
    )

    spec = read_policy(path)

    limit, audit = spec.entries
    assert (limit.name, limit.effective_band, limit.effective_fail_mode) == (
        "acme.refund_limit",
        Band.GUARDRAIL,
        FailMode.CLOSED,
    )
    assert limit.effective_timeout == timedelta(milliseconds=250)
    assert limit.settings == {"limit": 300, "currency": "USD"}
    assert limit.baseline is False
    assert (audit.name, audit.effective_band) == ("acme.audit_tools", Band.APP)
    assert audit.effective_hooks == (HookPoint.TOOL_AFTER,)
    assert audit.effective_fail_mode is FailMode.CLOSED
    assert audit.effective_timeout == timedelta(seconds=5)
    assert dict(spec.sources) == {
        "acme.refund_limit": "policy.yaml:3",
        "acme.audit_tools": "policy.yaml:7",
    }
    assert dict(spec.retry_budgets) == {}
    assert (spec.blocked_message, spec.escalated_message) == (None, None)


def test_module_attribute_references_import_the_applications_own_middleware(
    write: WriteFile,
) -> None:
    write("app_policies.py", APP_MODULE)
    path = write(
        "policy.yaml",
        """
        version: 1
        middleware:
          - use: app_policies:tone
          - use: app_policies:Holder.greet
        """,
    )

    tone, greet = read_policy(path).entries

    # A module's middleware keeps the name it was declared with.
    assert (tone.name, tone.effective_band) == ("tone", Band.PLATFORM)
    assert (greet.name, greet.effective_hooks) == ("greeting", (HookPoint.RUN_START,))


def test_the_baseline_profile_comes_first_and_alone_places_middleware_in_baseline(
    write: WriteFile,
) -> None:
    write("app_policies.py", APP_MODULE)
    org = write(
        "org.yaml",
        """
        version: 1
        middleware:
          - use: app_policies:tone
            band: baseline
          - use: acme.no_weekend_refunds
            band: guardrail
        retry_budgets: {model.response: 1, tool.after: 3}
        blocked_message: Blocked by the org.
        escalated_message: Sent to a person.
        """,
    )
    path = write(
        "policy.yaml",
        """
        version: 1
        middleware:
          - use: acme.refund_limit
            band: guardrail
            settings: {limit: 100}
          - use: acme.audit_tools
        retry_budgets: {model.response: 4}
        blocked_message: Not allowed.
        """,
    )

    spec = read_policy(path, baseline=org)

    assert [(e.name, e.baseline) for e in spec.entries] == [
        ("tone", True),
        ("acme.no_weekend_refunds", True),
        ("acme.refund_limit", False),
        ("acme.audit_tools", False),
    ]
    assert spec.entries[0].effective_band is Band.BASELINE
    assert dict(spec.retry_budgets) == {HookPoint.MODEL_RESPONSE: 4, HookPoint.TOOL_AFTER: 3}
    assert spec.blocked_message == "Not allowed."
    assert spec.escalated_message == "Sent to a person."
    assert spec.sources["tone"] == "org.yaml:3"

    engine = spec.engine()
    # Inbound: outermost band first; within guardrail, the profile's entry first.
    assert [e.name for e in engine.order(HookPoint.TOOL_BEFORE)] == [
        "acme.no_weekend_refunds",
        "acme.refund_limit",
        "acme.audit_tools",
    ]
    # Outbound: innermost band first, so the baseline entry runs last.
    assert [e.name for e in engine.order(HookPoint.OUTPUT_FINAL)] == ["tone"]
    assert [e.name for e in engine.order(HookPoint.TOOL_AFTER)] == ["acme.audit_tools"]


def test_load_policy_builds_the_engine_and_its_arguments_win_over_the_files(
    write: WriteFile,
) -> None:
    path = write(
        "policy.yaml",
        """
        version: 1
        middleware:
          - use: acme.audit_tools
        retry_budgets: {model.response: 4, tool.after: 0}
        blocked_message: Not allowed.
        escalated_message: Sent to a person.
        """,
    )

    from_files = load_policy(path)
    overridden = load_policy(
        path, retry_budgets={"tool.after": 5}, blocked_message="No.", escalated_message="Later."
    )

    assert isinstance(from_files, PolicyEngine)
    assert [e.name for e in from_files.entries] == ["acme.audit_tools"]
    assert from_files.retry_budget(HookPoint.MODEL_RESPONSE) == 4
    assert from_files.retry_budget(HookPoint.TOOL_AFTER) == 0
    assert from_files.retry_budget(HookPoint.STREAM_CHUNK) == DEFAULT_RETRY_BUDGET
    assert (from_files.blocked_message, from_files.escalated_message) == (
        "Not allowed.",
        "Sent to a person.",
    )
    assert overridden.retry_budget(HookPoint.MODEL_RESPONSE) == 4
    assert overridden.retry_budget(HookPoint.TOOL_AFTER) == 5
    assert (overridden.blocked_message, overridden.escalated_message) == ("No.", "Later.")


def test_a_spec_without_middleware_installs_nothing(write: WriteFile) -> None:
    spec = read_policy(write("policy.yaml", "version: 1\n"))

    assert spec.entries == ()
    assert load_policy(write("other.yaml", "version: 1\nmiddleware: []\n")).entries == ()


def test_a_loaded_policy_blocks_a_live_run_through_the_plugins_middleware(
    write: WriteFile,
) -> None:
    paid: list[int] = []

    @tool
    def refund(amount: int, day: str) -> str:
        """Refund an amount.

        Args:
            amount: How much.
            day: The day of the week.
        """
        paid.append(amount)
        return "refunded"

    path = write(
        "policy.yaml",
        """
        version: 1
        middleware:
          - use: acme.no_weekend_refunds
            band: guardrail
          - use: acme.refund_limit
            settings: {limit: 300}
        blocked_message: Refunds like this one need the finance team.
        """,
    )
    calls = [
        ScriptedTurn(tool_calls=[ScriptedToolCall("refund", {"amount": 50, "day": "Monday"})]),
        ScriptedTurn(tool_calls=[ScriptedToolCall("refund", {"amount": 900, "day": "Monday"})]),
    ]
    agent = Agent(ScriptedModel([*calls, "Done."]), tools=[refund], policy=load_policy(path))

    result = agent("Refund twice")

    assert paid == [50]
    assert result.stop_reason == "blocked"
    assert result.halt is not None
    assert (result.halt.hook, result.halt.middleware) == ("tool.before", "acme.refund_limit")
    assert result.halt.reason == "refund of 900 EUR is over the limit"
    assert result.text == "Refunds like this one need the finance team."
