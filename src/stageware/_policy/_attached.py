"""``Attached``: one middleware at one hook point, with what a call there needs resolved.

The engine builds these once, when it is constructed: a call then reads the middleware's
band, logger, timeout and what its fail mode makes of an error, instead of working them
out (and asking ``logging`` for the logger) on every call of every run. Entries are
immutable and ``logging.getLogger`` returns one logger per name for the life of the
process, so nothing here can go stale. A hook point that no middleware declares has no
``Attached`` at all, and its handler is not even registered on the agent.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import final

from stageware._generated.policy_points import Band, HookPoint

from ._declare import FailMode, Handler
from ._entries import PolicyEntry
from ._outcomes import Block
from ._rules import ALLOWED

__all__ = ["Attached"]


@final
@dataclass(frozen=True, slots=True)
class Attached:
    """A middleware as it runs at one hook point.

    Attributes:
        entry: The installed entry.
        point: The hook point.
        hook: Its value, as decision records name it (``tool.before``).
        name: The middleware's name.
        handler: The built callable.
        band: The band it runs in.
        band_name: Its value, as decision records name it (``app``).
        limit: Its timeout in seconds, or ``None`` for none.
        fails_to_block: Whether an error of it becomes ``Block``: its fail mode is
            ``closed`` and the hook point allows ``Block`` (``run.error`` and ``run.end``
            report what already happened, so an error there is traced like an open one).
        logger: The logger named for it (``stageware.policy.<name>``), its ``env.logger``.
    """

    entry: PolicyEntry
    point: HookPoint
    hook: str
    name: str
    handler: Handler
    band: Band
    band_name: str
    limit: float | None
    fails_to_block: bool
    logger: logging.Logger

    @classmethod
    def at(cls, point: HookPoint, entry: PolicyEntry) -> Attached:
        """*entry* attached at *point*."""
        timeout = entry.effective_timeout
        band = entry.effective_band
        return cls(
            entry=entry,
            point=point,
            hook=point.value,
            name=entry.name,
            handler=entry.handler,
            band=band,
            band_name=band.value,
            limit=None if timeout is None else timeout.total_seconds(),
            fails_to_block=(
                entry.effective_fail_mode is FailMode.CLOSED and Block in ALLOWED[point]
            ),
            logger=logging.getLogger(f"stageware.policy.{entry.name}"),
        )
