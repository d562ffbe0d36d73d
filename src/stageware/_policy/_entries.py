"""``PolicyEntry``: one middleware as a policy installs it, and the rules a spec must keep.

A spec may place a middleware in a band, narrow its hooks, give settings, tighten its
fail mode and shorten its timeout: never the reverse, since an application spec must not
weaken what a middleware's author declared. Only the org baseline profile uses the
baseline band. The spec loader builds entries from YAML; code can build them directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, final

from stageware._generated.policy_points import Band, HookPoint

from ._declare import FailMode, Handler, MiddlewareDef, is_pending_declaration, middleware
from ._errors import SpecError

__all__ = ["PolicyEntry", "declared_middleware"]


@final
@dataclass(frozen=True)
class PolicyEntry:
    """A middleware to install, with what the policy spec says about it.

    Each optional field left ``None`` keeps the declaration's value.

    Attributes:
        middleware: The declared middleware.
        band: The band to run it in; never ``baseline`` unless ``baseline`` is set.
        hooks: A subset of the declared hooks to attach it to.
        settings: Settings for its config model.
        fail_mode: ``closed`` to tighten an ``open`` middleware (never the reverse).
        timeout: A shorter timeout than the declared one (never longer).
        baseline: Whether the entry comes from the org baseline profile.
        settings_dir: The folder relative paths in ``settings`` are read from: the spec
            file's own folder when the spec loader builds the entry; ``None`` (the
            working directory) by default. See ``MiddlewareDef.build``.

    Raises:
        TypeError: If ``middleware`` is not a ``MiddlewareDef`` (say, a function not
            decorated with ``@middleware(...)``).
        SpecError: If the entry loosens the declaration, or places it in the baseline band
            without being part of the baseline profile.
    """

    middleware: MiddlewareDef
    band: Band | None = None
    hooks: tuple[HookPoint, ...] | None = None
    settings: Mapping[str, Any] | None = None
    fail_mode: FailMode | None = None
    timeout: timedelta | None = None
    baseline: bool = False
    settings_dir: Path | None = None
    _handler: Handler | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        name = declared_middleware(self.middleware, "PolicyEntry's middleware").name
        if self.band is Band.BASELINE and not self.baseline:
            raise SpecError(
                f"middleware {name!r}: band 'baseline' is reserved for the org baseline "
                "profile (pass it with baseline=...); use guardrail, platform or app",
                middleware=name,
            )
        if self.hooks is not None:
            if not self.hooks:
                raise SpecError(f"middleware {name!r}: hooks is empty", middleware=name)
            extra = [h.value for h in self.hooks if h not in self.middleware.hooks]
            if extra:
                declared = ", ".join(h.value for h in self.middleware.hooks)
                raise SpecError(
                    f"middleware {name!r}: hooks may only narrow the declared ones "
                    f"({declared}); {', '.join(extra)} is not among them",
                    middleware=name,
                )
        if self.fail_mode is FailMode.OPEN and self.middleware.fail_mode is FailMode.CLOSED:
            raise SpecError(
                f"middleware {name!r} is declared fail_mode 'closed'; a spec may tighten a "
                "fail mode to 'closed', never loosen it to 'open'",
                middleware=name,
            )
        declared_timeout = self.middleware.timeout
        spec_timeout = self.timeout
        if (
            spec_timeout is not None
            and declared_timeout is not None
            and spec_timeout > declared_timeout
        ):
            raise SpecError(
                f"middleware {name!r}: timeout {spec_timeout.total_seconds():g}s is longer than "
                f"the declared {declared_timeout.total_seconds():g}s; a spec may only shorten it",
                middleware=name,
            )
        # Built now, so that bad settings fail when the policy is loaded, not mid-run.
        handler = self.middleware.build(self.settings, settings_dir=self.settings_dir)
        object.__setattr__(self, "_handler", handler)

    @property
    def name(self) -> str:
        """The middleware's name."""
        return self.middleware.name

    @property
    def handler(self) -> Handler:
        """The built callable."""
        assert self._handler is not None  # set by __post_init__
        return self._handler

    @property
    def effective_band(self) -> Band:
        """The band it runs in."""
        return self.band if self.band is not None else self.middleware.band

    @property
    def effective_hooks(self) -> tuple[HookPoint, ...]:
        """The hook points it attaches to."""
        return self.hooks if self.hooks is not None else self.middleware.hooks

    @property
    def effective_fail_mode(self) -> FailMode:
        """Its fail mode."""
        return self.fail_mode if self.fail_mode is not None else self.middleware.fail_mode

    @property
    def effective_timeout(self) -> timedelta | None:
        """Its timeout, the shorter of the declared one and the spec's."""
        return self.timeout if self.timeout is not None else self.middleware.timeout


def declared_middleware(given: object, where: str) -> MiddlewareDef:
    """*given*, if it is a declared middleware (a ``MiddlewareDef``).

    Untyped code, or code that ignored its checker, may pass anything: what it passed is
    named in the error, with the way to turn it into a middleware.

    Raises:
        TypeError: For anything else; *where* says which argument it was.
    """
    if isinstance(given, MiddlewareDef):
        return given
    decorator = "@middleware(hooks=[...], fail_mode=...)"
    declare = f"decorate it with {decorator}"
    if isinstance(given, PolicyEntry):
        problem = (
            "a PolicyEntry, which already wraps a middleware: pass the entry to PolicyEngine "
            "as it is, or its .middleware"
        )
    elif is_pending_declaration(given):
        problem = (
            "what @middleware(...) returns, not yet applied: put it above an async function "
            "or a class, as a decorator"
        )
    elif given is middleware:
        problem = f"the @middleware decorator itself: decorate a function with {decorator}"
    elif isinstance(given, str):
        problem = (
            f"the string {given!r}, not a middleware: PolicyEngine takes declared middleware; "
            "a policy spec names middleware (load_policy)"
        )
    elif isinstance(given, type):
        problem = f"the class {_qualified(given)}, not a declared middleware: {declare}"
    elif callable(given):
        problem = f"the function {_qualified(given)}, not a declared middleware: {declare}"
    else:
        problem = f"{type(given).__name__} {given!r:.60}, not a declared middleware"
    raise TypeError(f"{where} is {problem}")


def _qualified(target: object) -> str:
    module = getattr(target, "__module__", None)
    name = getattr(target, "__qualname__", None) or repr(target)
    return f"{module}.{name}" if isinstance(module, str) else str(name)
