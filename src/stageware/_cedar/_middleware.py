"""``cedar_policy``: a declared policy middleware that asks Cedar policies.

It is built once per policy (``MiddlewareDef.build`` with its settings), and everything
that can be checked without a run is checked then: the policy files parse, and they
validate against the schema of the tools and the principal's attributes, so a policy that
names a tool the agent lacks or a field its input does not have is refused before the
first run, with the file, line and column.

At each step it decides, Cedar's answer is the outcome: ``Allow`` -> continue; ``Deny``
(a ``forbid`` matched, or no ``permit`` did) -> ``Block`` naming the policies, or, with
``on_deny="guide"`` at ``tool.before``, a ``Guide`` whose feedback the model reads. A
tool call of a tool the schema lacks, or with input that does not fit the tool's schema,
is refused the same way: Cedar cannot permit what it cannot type. The deployment's own
data not fitting (a principal's attributes), a request Cedar cannot decide, or an Allow
reached while some policy failed to evaluate, is a middleware error that the declared
fail mode decides (closed: blocked). A run the application passed no principal for is
refused unless ``anonymous="agent"`` lets the agent itself be the principal.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, Final, Literal, cast

import anyio.to_thread
import cedarpy
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from stageware.policy import (
    Block,
    Guide,
    HookPoint,
    MiddlewareDef,
    Outcome,
    PolicyEnv,
    middleware,
)

from . import _cedarpy
from ._policies import CedarPolicyError, PolicySource, read_policies, validate
from ._requests import UnfitInput, UnknownTool, build_request
from ._schema import HOOKS, PolicySchema, tool_specs

__all__ = ["CedarEvaluationError", "CedarSettings", "cedar_policy"]


class CedarEvaluationError(RuntimeError):
    """Cedar could not decide a request.

    Its data did not fit the schema, or a policy failed to evaluate (an overflow, say)
    where the others allowed: the skipped policy might have been a ``forbid``.
    """


class CedarSettings(BaseModel):
    """The settings of ``cedar_policy``, in a spec's ``settings:`` or a ``PolicyEntry``.

    At least one of ``policies`` and ``policy_text`` is required.
    """

    model_config: ClassVar[ConfigDict] = ConfigDict(
        extra="forbid", frozen=True, arbitrary_types_allowed=True
    )

    policies: list[Path] = Field(default_factory=list[Path])
    """Cedar policy files, read when the middleware is built. A relative path is read from
    the spec file's folder when a spec gives it, and from the working directory when code
    does."""
    policy_text: str | None = None
    """Cedar policies given inline, after those of the files."""
    tools: str | list[Any] = Field(default_factory=list[Any])
    """The tools whose calls the policies may permit: tools (``@tool`` functions, any
    ``AgentTool``), their ``tool_spec`` dictionaries, or ``"package.module:attribute"``
    naming such a list. A call of any other tool is refused."""
    principal_attributes: dict[str, Any] | None = None
    """JSON Schema (an object with ``properties``) of the attributes the application
    gives its ``Principal``; ``None`` for none."""
    on_deny: Literal["block", "guide"] = "block"
    """``block`` ends the run; ``guide`` turns a refused tool call into an error result
    the model reads, and the run goes on (at ``tool.before``; elsewhere it blocks)."""
    anonymous: Literal["deny", "agent"] = "deny"
    """A run without a ``Principal``: ``deny`` refuses each step; ``agent`` asks the
    policies with ``Agent::"<agent name>"`` as the principal."""

    @field_validator("policies", mode="after")
    @classmethod
    def _from_the_spec(cls, policies: list[Path], info: ValidationInfo) -> list[Path]:
        # The spec's folder, when a spec gave these settings (see MiddlewareDef.build).
        context: object = info.context
        folder = (
            cast(dict[str, object], context).get("settings_dir")
            if isinstance(context, dict)
            else None
        )
        if not isinstance(folder, Path):
            return policies
        return [path if path.is_absolute() else folder / path for path in policies]

    @model_validator(mode="after")
    def _some_policies(self) -> CedarSettings:
        if not self.policies and self.policy_text is None:
            raise ValueError("give Cedar policies: 'policies' (files) or 'policy_text'")
        return self


def _read(path: Path) -> tuple[str, str]:
    try:
        return str(path), path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CedarPolicyError([f"{path}: cannot be read: {error}"]) from None


class _CedarPolicy:
    """Decide tool calls, model routing and input with Cedar policies."""

    def __init__(self, config: CedarSettings) -> None:
        self._settings = config
        self._schema = PolicySchema(tool_specs(config.tools), config.principal_attributes)
        schema_json = self._schema.json()
        files = [_read(path) for path in config.policies]
        if config.policy_text is not None:
            files.append(("<policy_text>", config.policy_text))
        self._source: PolicySource = read_policies(files)
        validate(self._source, schema_json)
        self._cedar_schema = cedarpy.Schema.from_json_str(json.dumps(schema_json))

    async def __call__(self, event: BaseModel, env: PolicyEnv) -> Outcome | None:
        principal = env.principal
        if principal is None and self._settings.anonymous == "deny":
            return self._refuse(
                env, f"Cedar policy refused {env.hook.value}: the run has no principal"
            )
        try:
            built = build_request(self._schema, event, env, principal)
        except UnknownTool as unknown:
            return self._refuse(
                env,
                f"Cedar policy refused the call of tool {str(unknown)!r}: it is not in the "
                "Cedar schema, so no policy can permit it",
            )
        except UnfitInput as unfit:
            # The model's input, not the deployment's data: refused, as the tool would.
            return self._refuse(env, f"Cedar policy refused {unfit}")
        decide = partial(
            _cedarpy.is_authorized,
            built.request,
            self._source.policies,
            built.entities,
            schema=self._cedar_schema,
        )
        # In a thread, so that the declared timeout can stop waiting for it.
        result = await anyio.to_thread.run_sync(decide, abandon_on_cancel=True)
        diagnostics = result.diagnostics
        if result.decision is cedarpy.Decision.NoDecision:
            problems = [*diagnostics.errors, *diagnostics.reasons]
            raise CedarEvaluationError("Cedar could not decide: " + "; ".join(problems))
        names = [self._source.describe(reason) for reason in diagnostics.reasons]
        for error in diagnostics.errors:
            # A policy that errors is skipped by Cedar: say so in the trace.
            env.note(f"cedar: {error}")
        if result.decision is cedarpy.Decision.Allow and diagnostics.errors:
            # The skipped policy may be a forbid the model made error on purpose (an
            # overflow in its input): an Allow it did not weigh is no decision.
            raise CedarEvaluationError(
                f"Cedar could not decide {built.subject}: a policy failed to evaluate: "
                + "; ".join(diagnostics.errors)
            )
        if result.decision is cedarpy.Decision.Allow:
            env.note(f"cedar: {built.subject} permitted by {', '.join(names)}")
            return None
        why = f"forbidden by {', '.join(names)}" if names else "no policy permits it"
        return self._refuse(
            env, f"Cedar policy refused {built.subject} for {built.principal}: {why}"
        )

    def _refuse(self, env: PolicyEnv, reason: str) -> Outcome:
        if self._settings.on_deny == "guide" and env.hook is HookPoint.TOOL_BEFORE:
            return Guide(f"{reason}. Do not call it again this way.")
        return Block(reason)


cedar_policy: Final[MiddlewareDef] = middleware(
    hooks=list(HOOKS),
    fail_mode="closed",
    band="guardrail",
    timeout="2s",
    name="cedar",
    config=CedarSettings,
    sample={
        "policy_text": (
            'permit(principal in Role::"agents", action, resource);\n'
            "forbid(principal, action, resource) when { context.run.attempt > 3 };\n"
        )
    },
)(_CedarPolicy)
"""Cedar policies as a policy middleware (``tool.before``, ``route.select``,
``input.received``; fail mode closed, band guardrail, 2 s timeout), built with
``CedarSettings``: ``PolicyEntry(cedar_policy, settings={...})`` or, in a spec,
``use: stageware.cedar:cedar_policy``."""
