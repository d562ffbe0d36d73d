"""Model fallback: an InvokeModel Wrap handler that moves a failed call on to the next model.

Routing is middleware here, not a model class that wraps other models: the handler calls
``next_fn`` with the context as it came (``context.model``), and on a failure worth
moving on from, again with ``context.replace(model=backup)``, one backup after another.
The host runs the rest of the stage (the terminal, the Output handlers, the retry
strategy) as for any other call.

The rules it keeps:

- **Which failures move on.** Those of the types in ``on`` (``ModelError`` by default,
  so ``ModelThrottledError`` too) that are not of a type in ``unless``
  (``ContextWindowOverflowError`` by default: the same conversation is as long for the
  next model; pass ``unless=()`` when a backup has a larger window). Anything else,
  cancellation included, passes through at once.
- **Only before the answer has started.** By default events are passed on as they
  arrive, so the caller streams live, and a failure after the first event of a model's
  answer is raised as it is: moving on would stream a second answer after a part of the
  first. With ``buffer=True`` each attempt's events are held until its result, so a
  failure at any point moves on, at the cost of live streaming.
- **The final error is the last model's own**, of its own type (so the agent's retry
  strategy still retries a ``ModelThrottledError``, from the first model again, and
  context management still sees a ``ContextWindowOverflowError``), with a note for each
  earlier failure. Each move is logged at WARNING by ``stageware.middleware``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable
from contextlib import aclosing
from typing import Final, cast, final

from stageware import (
    ContextWindowOverflowError,
    InvokeModelContext,
    InvokeModelEvent,
    InvokeModelNext,
    Model,
    ModelError,
)

__all__ = ["ModelFallback"]

_log: Final = logging.getLogger("stageware.middleware")


@final
class ModelFallback:
    """Try the call's own model, then each of *fallbacks* in turn, until one answers.

    Register it on the InvokeModel stage (Wrap):

    ```python
    agent.add_middleware(InvokeModelStage, ModelFallback([backup, last_resort]))
    ```

    Args:
        fallbacks: The models to move on to, in order; at least one.
        on: The exception types that move the call on to the next model.
        unless: Exception types that never do, even when they are of a type in *on*.
        buffer: Hold each attempt's events until its result, so that a failure after
            the answer started streaming moves on too (the caller then sees no event of
            a call until its model finished).

    Raises:
        ValueError: *fallbacks* is empty.
        TypeError: A fallback is not a ``Model``, or *on* or *unless* holds something
            other than an exception type.
    """

    __slots__ = ("_buffer", "_fallbacks", "_on", "_unless")

    def __init__(
        self,
        fallbacks: Iterable[Model],
        *,
        on: tuple[type[Exception], ...] = (ModelError,),
        unless: tuple[type[Exception], ...] = (ContextWindowOverflowError,),
        buffer: bool = False,
    ) -> None:
        models = tuple(fallbacks)
        if not models:
            raise ValueError("ModelFallback needs at least one model to fall back to")
        for index, model in enumerate(models):
            # The types are promises to a checker; this is what reaches us at run time.
            if not isinstance(cast("object", model), Model):
                raise TypeError(
                    f"ModelFallback: fallbacks[{index}] is {model!r}, not a Model (an object "
                    "with a stream() method)"
                )
        _check_types("on", on)
        _check_types("unless", unless)
        self._fallbacks = models
        self._on = on
        self._unless = unless
        self._buffer = buffer

    @property
    def fallbacks(self) -> tuple[Model, ...]:
        """The models a failed call moves on to, in order."""
        return self._fallbacks

    async def __call__(
        self, context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        """Stream the call from the first model that answers (an InvokeModel Wrap handler)."""
        failures: list[tuple[Model, Exception]] = []
        models = (context.model, *self._fallbacks)
        for index, model in enumerate(models):
            attempt = context if index == 0 else context.replace(model=model)
            passed_on = 0
            held: list[InvokeModelEvent] = []
            try:
                async with aclosing(next_fn(attempt)) as events:
                    async for event in events:
                        if self._buffer:
                            held.append(event)
                        else:
                            passed_on += 1
                            yield event
            except Exception as error:
                last = index == len(models) - 1
                moves_on = self._moves_on(error)
                if passed_on and moves_on and not last:
                    error.add_note(
                        f"ModelFallback: not moved on to another model: {_name(model)} had "
                        f"already streamed {passed_on} event(s) of its answer (buffer=True "
                        "moves on at any point)"
                    )
                if last or passed_on or not moves_on:
                    for earlier, failure in failures:
                        error.add_note(
                            f"ModelFallback: {_name(earlier)} failed before it: "
                            f"{type(failure).__name__}: {failure}"
                        )
                    raise
                failures.append((model, error))
                _log.warning(
                    "model call to %s failed (%s: %s); falling back to %s",
                    _name(model),
                    type(error).__name__,
                    error,
                    _name(models[index + 1]),
                )
                continue
            for event in held:
                yield event
            return

    def _moves_on(self, error: Exception) -> bool:
        return isinstance(error, self._on) and not isinstance(error, self._unless)

    def __repr__(self) -> str:
        models = ", ".join(_name(model) for model in self._fallbacks)
        return f"ModelFallback([{models}], buffer={self._buffer})"


def _check_types(name: str, types: tuple[type[Exception], ...]) -> None:
    # Checked here, not at the first failure: a mistake would otherwise surface as a
    # TypeError from isinstance() in the middle of a failing call, hiding its error.
    given = cast("object", types)
    if not isinstance(given, tuple):
        raise TypeError(f"ModelFallback: {name} must be a tuple of exception types")
    for kind in cast("tuple[object, ...]", given):
        if not (isinstance(kind, type) and issubclass(kind, Exception)):
            raise TypeError(f"ModelFallback: {name} holds {kind!r}, not an exception type")


def _name(model: Model) -> str:
    """A model as logs and notes name it: its ``model_id``, else its type."""
    model_id: object = getattr(model, "model_id", None)
    if isinstance(model_id, str):
        return f"{type(model).__name__}({model_id!r})"
    return type(model).__name__
