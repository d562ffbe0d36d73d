"""Tool retry: an ExecuteTool Wrap handler that runs a failed tool call again, with backoff.

The attempts are driven by tenacity's ``AsyncRetrying`` (its stop, wait and retry
strategies), sleeping with ``anyio.sleep``, so it runs on asyncio and trio alike.

The rules it keeps:

- **Only the tools named.** ``tools=`` is required: a retry runs the tool again, so only a
  tool whose second run does no harm (a read, an idempotent write) may be retried, and
  only its author knows which those are. A timeout or a lost connection may mean that the
  request reached the other side and took effect; retrying a refund on them refunds twice.
- **What a failure is.** Inside the ExecuteTool chain a tool that raised is already an
  error ``ToolResultEvent`` carrying the exception (``result.exception``); that is what is
  retried, when the exception is of a type in ``on`` (transient ones by default:
  ``TimeoutError``, ``ConnectionError``) or ``when(exception)`` says so. An error result
  without an exception is the tool's own answer, not a failure, and is passed on. An
  exception *raised* through ``next_fn`` (a middleware inside failing, an interrupt, a
  policy's outcome, cancellation) passes through untouched: it is not the tool's failure.
- **Only the last attempt's result is yielded.** The host streams one result per call; a
  ``ToolStreamEvent`` of any attempt streams live, as it comes.
- **Interrupts are never retried.** An attempt halted by an interrupt ends the call as it
  is.
- **A cancelled run does not wait.** A backoff wait ends when the run's cancel signal is
  set, and no attempt starts after it; the last failure is then the call's result, and no
  retry is announced (``on_retry``, log) for it. A cancellation of the task ends the wait
  at once.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, cast, final

import anyio

from stageware import (
    CancelSignal,
    ExecuteToolContext,
    ExecuteToolEvent,
    ExecuteToolNext,
    ToolInterruptEvent,
    ToolResultEvent,
    ToolUse,
)

if TYPE_CHECKING:
    from tenacity import RetryCallState

__all__ = ["ToolRetry", "ToolRetryAttempt"]

_log: Final = logging.getLogger("stageware.middleware")

# How often a backoff wait looks at the run's cancel signal, which any thread may set.
_CANCEL_POLL_SECONDS: Final = 0.02


@final
@dataclass(frozen=True, slots=True)
class ToolRetryAttempt:
    """A failed attempt that ``ToolRetry`` is about to retry, as ``on_retry`` receives it.

    Attributes:
        tool_use: The call, as the model asked for it.
        attempt: The number of the attempt that failed (1 for the first).
        max_attempts: The most attempts the call gets.
        error: The exception the attempt failed with.
        delay: Seconds ``ToolRetry`` waits before the next attempt.
    """

    tool_use: ToolUse
    attempt: int
    max_attempts: int
    error: Exception
    delay: float


class _Failed(Exception):
    """One attempt's error result, carried through tenacity's retry decision."""

    def __init__(self, result: ToolResultEvent, error: Exception) -> None:
        super().__init__(str(error))
        self.result = result
        self.error = error


@final
class ToolRetry:
    """Run a tool call again when it failed with a transient error, with backoff and jitter.

    Register it on the ExecuteTool stage (Wrap):

    ```python
    agent.add_middleware(ExecuteToolStage, ToolRetry(tools=["fetch_page"]))
    ```

    Name only tools that are safe to run twice: the default ``on`` errors, a timeout or a
    lost connection, may come after the call took effect.

    The wait before retry *n* (1 for the first) is ``initial_delay * 2 ** (n - 1)``, at
    most ``max_delay``, plus a random ``0`` to ``jitter`` seconds. When the last attempt
    fails too, its error result is the call's result: the model reads the last error.

    Args:
        tools: The names of the tools to retry (required): tools safe to run again.
        max_attempts: Attempts of one call, the first included; at least 1.
        on: The exception types that make a failed call worth another attempt (by
            default ``TimeoutError`` and ``ConnectionError``, which may mean the request
            was sent and took effect).
        when: Decides for any other exception: ``True`` retries it.
        initial_delay: Seconds before the first retry; each retry doubles it.
        max_delay: The longest wait between two attempts, in seconds.
        jitter: The most seconds added at random to each wait, so that calls that failed
            together do not come back together.
        on_retry: Called before each wait with the failed attempt (to count or trace
            retries); each retry is also logged at INFO by ``stageware.middleware``.

    Raises:
        ValueError: *max_attempts* is below 1, a delay or the jitter is negative, or
            *tools* is a string or empty.
        TypeError: *on* holds something other than an exception type.
    """

    __slots__ = (
        "_initial_delay",
        "_jitter",
        "_max_attempts",
        "_max_delay",
        "_on",
        "_on_retry",
        "_tools",
        "_when",
    )

    def __init__(
        self,
        *,
        tools: Iterable[str],
        max_attempts: int = 3,
        on: tuple[type[Exception], ...] = (TimeoutError, ConnectionError),
        when: Callable[[Exception], bool] | None = None,
        initial_delay: float = 0.5,
        max_delay: float = 10.0,
        jitter: float = 0.5,
        on_retry: Callable[[ToolRetryAttempt], None] | None = None,
    ) -> None:
        if max_attempts < 1:
            raise ValueError(f"ToolRetry: max_attempts must be at least 1, got {max_attempts}")
        for name, value in (
            ("initial_delay", initial_delay),
            ("max_delay", max_delay),
            ("jitter", jitter),
        ):
            if not value >= 0:  # NaN too
                raise ValueError(f"ToolRetry: {name} must be a number of seconds >= 0, got {value}")
        if isinstance(tools, str):
            raise ValueError(
                f"ToolRetry: tools={tools!r} is a string; pass a list of tool names, "
                f"tools=[{tools!r}]"
            )
        names = frozenset(tools)
        if not names:
            raise ValueError("ToolRetry: tools is empty; name the tools that are safe to run again")
        for name in names:
            if not isinstance(cast("object", name), str):
                raise TypeError(f"ToolRetry: tools holds {name!r}, not a tool name")
        given = cast("object", on)
        if not isinstance(given, tuple):
            raise TypeError("ToolRetry: on must be a tuple of exception types")
        for kind in cast("tuple[object, ...]", given):
            if not (isinstance(kind, type) and issubclass(kind, Exception)):
                raise TypeError(f"ToolRetry: on holds {kind!r}, not an exception type")
        self._tools = names
        self._max_attempts = max_attempts
        self._on = on
        self._when = when
        self._initial_delay = float(initial_delay)
        self._max_delay = float(max_delay)
        self._jitter = float(jitter)
        self._on_retry = on_retry

    @property
    def tools(self) -> frozenset[str]:
        """The names of the tools retried."""
        return self._tools

    @property
    def max_attempts(self) -> int:
        """Attempts of one call, the first included."""
        return self._max_attempts

    async def __call__(
        self, context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        """Run the call, and again while it fails worth retrying (an ExecuteTool Wrap handler)."""
        if context.tool_use["name"] not in self._tools:
            async for event in next_fn(context):
                yield event
            return
        # Imported on first use: tenacity costs more to import than stageware.middleware.
        from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt
        from tenacity.wait import wait_exponential, wait_random

        signal = context.cancel_signal
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self._max_attempts),
            wait=(
                wait_exponential(multiplier=self._initial_delay, min=0, max=self._max_delay)
                + wait_random(0, self._jitter)
            ),
            retry=retry_if_exception(self._retries),
            sleep=_sleeper(signal),
            before_sleep=lambda state: self._before_sleep(context.tool_use, signal, state),
            reraise=True,
        )
        last: _Failed | None = None
        try:
            async for attempt in retrying:
                if last is not None and signal.is_set():
                    break  # cancelled during the wait: the last failure stands
                result: ToolResultEvent | None = None
                interrupted = False
                async with aclosing(next_fn(context)) as events:
                    async for event in events:
                        if isinstance(event, ToolResultEvent):
                            result = event  # held: only the last attempt's is yielded
                            continue
                        interrupted = interrupted or isinstance(event, ToolInterruptEvent)
                        yield event
                if result is None:
                    return  # halted by an interrupt, or the host reports the missing result
                error = result.exception
                if interrupted or result.tool_result["status"] != "error" or error is None:
                    yield result
                    return
                last = _Failed(result, error)
                attempt.retry_state.set_exception((_Failed, last, None))
        except _Failed as failed:
            yield failed.result
            return
        if last is not None:
            yield last.result

    def _retries(self, raised: BaseException) -> bool:
        if not isinstance(raised, _Failed):
            return False
        error = raised.error
        return isinstance(error, self._on) or (self._when is not None and self._when(error))

    def _before_sleep(self, tool_use: ToolUse, signal: CancelSignal, state: RetryCallState) -> None:
        if signal.is_set():
            return  # cancelled: the wait ends at once and no retry follows
        outcome = state.outcome
        failed = None if outcome is None else outcome.exception()
        if not isinstance(failed, _Failed):
            return
        notice = ToolRetryAttempt(
            tool_use=tool_use,
            attempt=state.attempt_number,
            max_attempts=self._max_attempts,
            error=failed.error,
            delay=state.upcoming_sleep,
        )
        # INFO, as the agent logs its own retries of a throttled model: expected, handled.
        _log.info(
            "tool call %s (%r) failed on attempt %d of %d (%s: %s); retrying in %.2f s",
            tool_use["toolUseId"],
            tool_use["name"],
            notice.attempt,
            notice.max_attempts,
            type(failed.error).__name__,
            failed.error,
            notice.delay,
        )
        if self._on_retry is not None:
            self._on_retry(notice)

    def __repr__(self) -> str:
        tools = sorted(self._tools)
        on = ", ".join(kind.__name__ for kind in self._on)
        return f"ToolRetry(tools={tools!r}, max_attempts={self._max_attempts}, on=({on}))"


def _sleeper(signal: CancelSignal) -> Callable[[float], Awaitable[None]]:
    """A sleep for tenacity that ends early when the run's cancel signal is set."""

    async def sleep(seconds: float) -> None:
        deadline = anyio.current_time() + seconds
        while not signal.is_set():
            left = deadline - anyio.current_time()
            if left <= 0:
                return
            await anyio.sleep(min(left, _CANCEL_POLL_SECONDS))

    return sleep
