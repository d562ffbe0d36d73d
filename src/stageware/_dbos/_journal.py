"""The host's step journal on DBOS: each model and tool call a checkpointed DBOS step.

``DBOSJournal`` implements ``stageware._host._journal.StepJournal``. Inside a DBOS
workflow (and outside any step), ``reserve`` draws the next step id with
``DBOS.reserve_step()`` and ``run`` runs the call at that id with
``StepReservation.run_async``, named as the host named it (``model:<model>``,
``tool:<tool name>``): DBOS records the result, and on a replay hands the recorded result
back without running the call, or raises ``DBOSUnexpectedStepError`` if the replay drew
another kind of step at that place (the run took another path).

What DBOS records is a JSON text: ``{"value": ...}`` for a result (JSON data, as the
host hands it), ``{"raised": ...}`` for an exception (described as the host's
``_journal_data`` describes the errors it records itself), which the
journal raises itself: the exception as it was on the first run, rebuilt from the record
on a replay. DBOS sees a step that returned, so its own retries and error records stay
out of it. A step cancelled
(a ``BaseException`` that is not an ``Exception``) records nothing and runs again on a
replay.

Outside a workflow, or inside a DBOS step (an agent used as a tool, running within its
parent's step), a place runs the call plainly: DBOS records steps only in workflow code.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, final

from dbos import DBOS, StepReservation
from dbos import error as dbos_error

from stageware._host._journal_data import describe_error, rebuild_error

__all__ = ["DBOSJournal"]


@final
@dataclass(frozen=True, slots=True)
class _Place:
    name: str
    reservation: StepReservation | None  # None: run plainly, nothing recorded


@final
class DBOSJournal:
    """The journal of one agent invocation running as (or in) a DBOS workflow.

    Args:
        key: The invocation's identity, the same on a replay: the invocation's workflow
            id (``stageware:<kind>:<session id>:<unique part>/<n>``).
    """

    __slots__ = ("_failure", "_key")

    def __init__(self, key: str) -> None:
        self._key = key
        # DBOS's own error at a step (a replay that took another path, a cancelled
        # workflow, a workflow another execution owns now), kept: the host turns an
        # exception in a tool's step into the tool's error result, and the run must not
        # end as if nothing happened. DBOS raises the cancel and ownership errors as
        # BaseException (DBOSBaseException): the execution must stop, not handle them.
        self._failure: BaseException | None = None

    @property
    def key(self) -> str:
        """The invocation's identity (its lease owner and its final save carry it)."""
        return self._key

    @property
    def failure(self) -> BaseException | None:
        """DBOS's own error at a step, once one was raised (``StepJournal.failure``)."""
        return self._failure

    def reserve(self, name: str) -> object:
        """Draw the next DBOS step id for a step named *name* (plain outside workflow code)."""
        in_workflow_code = DBOS.workflow_id is not None and DBOS.step_id is None
        return _Place(name, DBOS.reserve_step() if in_workflow_code else None)

    async def run(self, place: object, step: Callable[[], Awaitable[Any]]) -> Any:
        """The result recorded at *place*, or *step*'s, recorded now; its exception raised."""
        if not isinstance(place, _Place):
            raise TypeError(f"a DBOSJournal place comes from its reserve(), got {place!r}")
        if place.reservation is None:
            return await step()

        # The exception itself, with its traceback, when the step ran here and raised.
        raised: list[Exception] = []

        async def recorded() -> str:
            try:
                value = await step()
            except Exception as error:
                raised.append(error)
                return json.dumps({"raised": describe_error(error)})
            try:
                return json.dumps({"value": value})
            except (TypeError, ValueError) as error:
                problem = TypeError(
                    f"the result of step {place.name!r} (invocation {self._key}) is not "
                    f"JSON data, which the journal records: {error}"
                )
                raised.append(problem)
                return json.dumps({"raised": describe_error(problem)})

        try:
            text: str = await place.reservation.run_async({"name": place.name}, recorded)
        except (dbos_error.DBOSException, dbos_error.DBOSBaseException) as error:
            self._failure = self._failure or error
            raise
        outcome: dict[str, Any] = json.loads(text)
        if "raised" in outcome:
            raise raised[0] if raised else rebuild_error(outcome["raised"])
        return outcome["value"]
