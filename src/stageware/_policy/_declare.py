"""Declaring policy middleware: ``@middleware(...)``, ``MiddlewareDef`` and ``FailMode``.

Everything an author can get wrong is refused here, at declaration, with the bad value
and the closest valid one: a declared middleware that imports is one the engine can run.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any, Final, TypeAlias, cast, final

from pydantic import BaseModel, ValidationError

from stageware._generated.policy_decorator import MiddlewareDeclaration
from stageware._generated.policy_points import Band, HookPoint

from ._choices import choose
from ._durations import parse_timeout
from ._env import PolicyEnv
from ._errors import SpecError, settings_error
from ._outcomes import Outcome

__all__ = [
    "FailMode",
    "Handler",
    "MiddlewareDef",
    "check_name",
    "is_pending_declaration",
    "middleware",
]

Handler: TypeAlias = Callable[[Any, PolicyEnv], Awaitable["Outcome | None"]]
"""What ``MiddlewareDef.build`` returns: ``await handler(event, env)``."""

# Dotted identifiers: the name goes into interrupt ids (``v1:policy:<hook>:<name>:...``),
# log records and spec files, so it must not hold a colon or white space.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


class FailMode(StrEnum):
    """What a middleware error (a raise, a timeout, a bad outcome) turns into."""

    OPEN = "open"
    """Continue, with the error in the trace: the middleware is advisory."""
    CLOSED = "closed"
    """Block: the step does not run unless the middleware approves it."""


@final
@dataclass(frozen=True, slots=True)
class MiddlewareDef:
    """A declared middleware, as contributed by a plugin.

    Attributes:
        name: The name given to the decorator; a plugin qualifies a bare name with its
            namespace (``acme.no_weekend_refunds``).
        target: The decorated async function, or a class whose instances are async
            callables. A class is built with its config model.
        hooks: The hook points it attaches to. A spec may narrow them.
        band: The band it runs in when the spec doesn't assign one.
        fail_mode: What a raise or timeout turns into: closed -> Block, open -> Continue
            plus a trace record.
        timeout: How long one call may take, or ``None`` for no limit.
        config: The settings model for a class middleware.
        description: The first paragraph of the target's docstring.
        sample: Settings the conformance suite builds a class middleware with.
    """

    name: str
    target: Callable[..., Any]
    hooks: tuple[HookPoint, ...]
    band: Band
    fail_mode: FailMode
    timeout: timedelta | None
    config: type[BaseModel] | None = None
    description: str | None = None
    sample: Mapping[str, Any] | None = None

    def build(
        self, settings: Mapping[str, Any] | None = None, *, settings_dir: Path | None = None
    ) -> Handler:
        """Return the callable to install, validating *settings* against ``config``.

        Args:
            settings: The settings, validated by the ``config`` model.
            settings_dir: The folder the settings were written in (a spec file's own
                folder), or ``None``. It is passed to the model's validators as the
                validation context's ``"settings_dir"``, so that a setting naming a file by
                a relative path can be read from there, as a user expects, rather than
                from the working directory.

        Raises:
            SpecError: If the settings are invalid, or given to a middleware that takes none.
        """
        if self.config is None:
            if settings:
                raise SpecError(
                    f"middleware {self.name!r} takes no settings (it declares no config "
                    f"model), got {sorted(settings)}",
                    middleware=self.name,
                )
            if inspect.isclass(self.target):
                return _checked_instance(self.target(), self.name)
            return self.target
        try:
            config = self.config.model_validate(
                dict(settings or {}), context=settings_context(settings_dir)
            )
        except ValidationError as error:
            raise settings_error(self.name, error) from None
        return _checked_instance(self.target(config), self.name)

    def with_name(self, name: str) -> MiddlewareDef:
        """The same middleware under another name (a plugin's qualified one)."""
        return MiddlewareDef(
            name=check_name(name),
            target=self.target,
            hooks=self.hooks,
            band=self.band,
            fail_mode=self.fail_mode,
            timeout=self.timeout,
            config=self.config,
            description=self.description,
            sample=self.sample,
        )


def settings_context(settings_dir: Path | None) -> dict[str, Path] | None:
    """The validation context a config model's validators get (see ``MiddlewareDef.build``)."""
    return None if settings_dir is None else {"settings_dir": settings_dir}


def _declare_middleware(
    *,
    hooks: Iterable[HookPoint | str],
    fail_mode: FailMode | str,
    band: Band | str = Band.APP,
    timeout: timedelta | str | float | None = None,
    name: str | None = None,
    config: type[BaseModel] | None = None,
    sample: Mapping[str, Any] | None = None,
) -> Callable[[Any], MiddlewareDef]:
    """Declare a policy middleware (the implementation behind ``middleware``).

    Raises:
        ValueError: For an unknown hook, fail mode or band, the baseline band, empty
            ``hooks``, a non-positive or unparsable timeout, or a bad name.
        TypeError: If the target isn't an async function or a class of async callables.
        SpecError: If ``sample`` does not validate against ``config``.
    """
    if isinstance(hooks, str):
        raise TypeError(f"hooks must be a list of hook points, not the string {hooks!r}")
    points = tuple(dict.fromkeys(choose(HookPoint, hook, "hook point") for hook in hooks))
    if not points:
        raise ValueError("hooks is empty; name at least one hook point, such as 'tool.before'")
    mode = choose(FailMode, fail_mode, "fail mode")
    chosen_band = choose(Band, band, "band")
    if chosen_band is Band.BASELINE:
        raise ValueError(
            "band='baseline' is not for declarations: only the org baseline profile places "
            "middleware in the baseline band; declare another band (the default is 'app') "
            "and let the operator's baseline profile assign it"
        )
    limit = parse_timeout(timeout, "timeout")
    given = cast(object, config)  # untyped callers exist
    if given is not None and not (isinstance(given, type) and issubclass(given, BaseModel)):
        raise TypeError(f"config must be a pydantic model class, got {given!r}")

    def declare(target: Any) -> MiddlewareDef:
        _check_target(target, config)
        declared = check_name(name if name is not None else getattr(target, "__name__", ""))
        if sample is not None:
            if config is None:
                raise ValueError(f"middleware {declared!r} has a sample but no config model")
            try:
                config.model_validate(dict(sample))
            except ValidationError as error:
                raise settings_error(declared, error, "sample") from None
        return MiddlewareDef(
            name=declared,
            target=target,
            hooks=points,
            band=chosen_band,
            fail_mode=mode,
            timeout=limit,
            config=config,
            description=_first_paragraph(inspect.getdoc(target)),
            sample=None if sample is None else dict(sample),
        )

    return declare


# Both checkers refuse this assignment for one overload alone, the one without `fail_mode`:
# it exists to give their error a name (FailModeRequired), and the call it describes
# raises TypeError here, since the signature people read keeps `fail_mode` required.
# Both ignores are checked: once either checker accepts the assignment, it fails the run.
middleware: Final[MiddlewareDeclaration[MiddlewareDef, PolicyEnv, Outcome | None]] = (
    _declare_middleware  # type: ignore[assignment]  # pyright: ignore[reportAssignmentType]
)
"""Declare a policy middleware: ``@middleware(hooks=[...], fail_mode=..., ...)``.

Arguments (keyword-only): ``hooks``, the hook points (``HookPoint`` members or their
values, at least one); ``fail_mode``, ``"open"`` or ``"closed"`` (required); ``band``, the
band when the spec assigns none (``app`` by default, never ``baseline``); ``timeout``, a
``timedelta``, seconds, or ``"250ms"``/``"2s"``/``"1.5m"``/``"1h"``; ``name``, by default
the target's ``__name__``; ``config``, a class middleware's settings model; ``sample``,
settings the conformance suite builds it with (validated now).

The target is ``async def f(event, env) -> Outcome | None`` or a class whose instances
are such callables. Typed per hook point: with one hook point the event is that point's
event class; with several, their union or ``HookEvent``.

Raises:
    ValueError: For an unknown hook, fail mode or band, the baseline band, empty
        ``hooks``, a non-positive or unparsable timeout, or a bad name.
    TypeError: If the target isn't an async function or a class of async callables.
    SpecError: If ``sample`` does not validate against ``config``.
"""


def is_pending_declaration(given: object) -> bool:
    """Whether *given* is what ``middleware(...)`` returns, before it decorates anything."""
    return getattr(given, "__qualname__", None) == _PENDING


# The qualified name of the function ``_declare_middleware`` returns.
_PENDING: Final = f"{_declare_middleware.__qualname__}.<locals>.declare"


def check_name(name: object) -> str:
    """Return *name* if it can name a middleware.

    Raises:
        ValueError: For anything but dotted identifiers (``acme.no_weekend_refunds``).
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(
            f"middleware name {name!r} is not a dotted identifier such as "
            "'no_weekend_refunds' or 'acme.no_weekend_refunds'"
        )
    return name


def _check_target(target: object, config: type[BaseModel] | None) -> None:
    if inspect.isclass(target):
        call = getattr(target, "__call__", None)  # noqa: B004 - the class's own method
        if call is None or not inspect.iscoroutinefunction(call):
            raise TypeError(
                f"middleware class {target.__qualname__} must define "
                "'async def __call__(self, event, env)'"
            )
        return
    if inspect.iscoroutinefunction(target):
        if config is not None:
            raise TypeError(
                f"{getattr(target, '__qualname__', target)!r} is a function, which cannot take "
                "settings; declare a class whose __init__ takes the config model instead"
            )
        return
    kind = "an async generator function" if inspect.isasyncgenfunction(target) else repr(target)
    raise TypeError(
        f"@middleware needs an async function 'async def f(event, env)' or a class whose "
        f"instances are async callables; got {kind}"
    )


def _checked_instance(instance: object, name: str) -> Handler:
    call = getattr(instance, "__call__", None)  # noqa: B004
    if call is None or not inspect.iscoroutinefunction(call):
        raise TypeError(f"middleware {name!r} built an instance that is not an async callable")
    return call  # type: ignore[no-any-return]


def _first_paragraph(doc: str | None) -> str | None:
    if not doc:
        return None
    return " ".join(doc.strip().split("\n\n", 1)[0].split())
