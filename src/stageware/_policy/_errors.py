"""``SpecError``: a policy spec, or a middleware's settings, that cannot be used."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError

from stageware._data_paths import format_path

__all__ = ["SpecError", "problem_lines", "settings_error"]


class SpecError(ValueError):
    """A policy spec, a baseline profile or a middleware's settings are invalid.

    The message names where: ``policy.yaml:12: middleware 'acme.refund_limit':
    settings.limit: ...`` for a spec file, or the middleware for settings given in code.

    Attributes:
        middleware: The middleware the error concerns, if it concerns one.
        locations: Where each problem is: for settings given in code, the pydantic error
            locations (``("limit",)``); for a spec file, the place in the document
            (``("middleware", 1, "settings", "limit")``).
    """

    def __init__(
        self,
        message: str,
        *,
        middleware: str | None = None,
        locations: Sequence[tuple[str | int, ...]] = (),
    ) -> None:
        super().__init__(message)
        self.middleware: str | None = middleware
        self.locations: tuple[tuple[str | int, ...], ...] = tuple(locations)


def settings_error(middleware: str, error: ValidationError, what: str = "settings") -> SpecError:
    """A ``SpecError`` for *what* of *middleware* that failed validation, one line per problem."""
    locations = [tuple(problem["loc"]) for problem in error.errors()]
    lines = [f"  {line}" for line in problem_lines(error, "(the settings as a whole)")]
    return SpecError(
        f"invalid {what} for middleware {middleware!r}:\n" + "\n".join(lines),
        middleware=middleware,
        locations=locations,
    )


def problem_lines(error: ValidationError, whole: str) -> list[str]:
    """One ``path: message`` per problem of *error*; *whole* names the value itself."""
    return [
        f"{format_path(problem['loc']) or whole}: {problem['msg']}" for problem in error.errors()
    ]
