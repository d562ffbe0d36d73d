"""cedarpy's two calls that take dictionaries, with the types its stubs leave open.

Its stubs say ``dict`` without parameters, which pyright strict reads as partly unknown;
these are the same functions, typed for how this package calls them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, cast

import cedarpy

__all__ = ["is_authorized", "validate_policies"]

is_authorized: Final = cast(
    Callable[..., cedarpy.AuthzResult],
    cedarpy.is_authorized,  # pyright: ignore[reportUnknownMemberType]
)
"""``cedarpy.is_authorized(request, policies, entities, schema=...)``."""

validate_policies: Final = cast(
    Callable[[str, dict[str, Any]], cedarpy.ValidationResult],
    cedarpy.validate_policies,  # pyright: ignore[reportUnknownMemberType]
)
"""``cedarpy.validate_policies(policies, schema)``."""
