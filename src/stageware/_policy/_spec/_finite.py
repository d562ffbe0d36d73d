"""Settings a spec gives must be finite numbers, whatever a config model's float accepts.

YAML's own ``.inf`` and ``.nan`` are refused when the file is read (``_yaml``), but a
setting reaches its config model as written, and pydantic reads the text ``inf``,
``nan`` or ``1e400`` into a float (not a ``Decimal``) as infinity or NaN. A limit
compared with infinity never trips, nor one compared with NaN: the operator's typo would
turn the check off in silence. So the settings a spec gives are checked once they are
validated, and every infinite or NaN number in them is a problem at its setting.

A config model whose setting may be infinite says so: ``allow_inf_nan=True`` in its
``model_config`` exempts its own fields (a nested model is checked by its own config).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import cast

from pydantic import BaseModel

from ._document import DocPath

__all__ = ["non_finite"]


def non_finite(settings: BaseModel) -> list[DocPath]:
    """The paths, as the settings were written, of the infinite and NaN numbers in them."""
    return list(_walk(settings, (), allowed=False))


def _walk(value: object, path: DocPath, *, allowed: bool) -> Iterator[DocPath]:
    if isinstance(value, BaseModel):
        model = type(value)
        exempt = model.model_config.get("allow_inf_nan") is True
        for name, field in model.model_fields.items():
            key = field.alias if field.alias is not None else name
            yield from _walk(getattr(value, name), (*path, key), allowed=exempt)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for name in (attribute.name for attribute in dataclasses.fields(value)):
            yield from _walk(getattr(value, name), (*path, name), allowed=allowed)
    elif isinstance(value, dict):
        for item_key, item in cast("Mapping[object, object]", value).items():
            yield from _walk(item, (*path, str(item_key)), allowed=allowed)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(cast("Sequence[object]", value)):
            yield from _walk(item, (*path, index), allowed=allowed)
    elif isinstance(value, (set, frozenset)):
        for item in cast("Iterable[object]", value):
            yield from _walk(item, path, allowed=allowed)
    elif not allowed and isinstance(value, float) and not math.isfinite(value):
        yield path
