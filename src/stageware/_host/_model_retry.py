"""When a throttled model call is tried again: the agent's retry policy.

A model that is throttling raises ``ModelThrottledError``; the model call
(``_model_call``) asks :class:`ThrottleRetries` how long to wait before the next attempt,
or whether to give up. The policy, :class:`ModelRetryStrategy`, is plain data on the
agent, named and shaped after Strands 1.62's ``ModelRetryStrategy`` (``max_attempts``,
``initial_delay``, ``max_delay``), with jitter and ``Retry-After`` added.
"""

from __future__ import annotations

import logging
import math
import random
from dataclasses import dataclass, field
from typing import final

from .models import ModelThrottledError

__all__ = ["ModelRetryStrategy", "ThrottleRetries"]

logger = logging.getLogger(__name__)


@final
@dataclass(frozen=True, slots=True)
class ModelRetryStrategy:
    """How an agent retries a model call that raised ``ModelThrottledError``.

    The wait before retry *n* (1 for the first) is ``initial_delay * 2 ** (n - 1)``,
    capped at ``max_delay``, then shortened by a random fraction of up to ``jitter`` so
    that agents throttled together do not come back together. With the defaults: about 4,
    8, 16, 32 and 64 seconds, then the sixth throttled attempt raises. When the error
    carries ``retry_after`` (the server's ``Retry-After``), the wait is exactly that; one
    longer than ``max_delay`` is not waited out: the error is raised at once.

    Other errors are never retried here; an ``AfterModelCallEvent`` hook that sets
    ``retry`` decides for itself, without this policy's wait. ``Agent(retry_strategy=None)``
    turns throttle retries off.

    Attributes:
        max_attempts: Attempts of one model call, the first included, before the
            throttling error is raised; 1 never retries.
        initial_delay: Seconds before the first retry; each retry doubles it.
        max_delay: The longest wait in seconds, and the longest ``Retry-After`` honoured.
        jitter: The largest fraction (0 to 1) taken off a backoff wait at random.
    """

    max_attempts: int = 6
    initial_delay: float = 4.0
    max_delay: float = 240.0
    jitter: float = 0.25

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts}")
        if self.initial_delay < 0 or self.max_delay < 0:
            raise ValueError(
                f"delays must not be negative, got initial_delay={self.initial_delay} and "
                f"max_delay={self.max_delay}"
            )
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter must be between 0 and 1, got {self.jitter}")

    def backoff(self, retry: int) -> float:
        """The wait in seconds before retry number *retry* (1 for the first), jittered."""
        # min() before the power grows: 2 ** 2000 overflows a float.
        delay = min(self.max_delay, self.initial_delay * 2.0 ** min(retry - 1, 64))
        return delay * (1 - self.jitter * random.random())


@final
@dataclass(slots=True)
class ThrottleRetries:
    """The throttling seen by one model call, and what the strategy makes of it."""

    strategy: ModelRetryStrategy | None
    throttled: int = field(default=0, init=False)

    def delay_after(self, error: Exception) -> float | None:
        """Seconds to wait before trying again after *error*, or ``None`` to raise it.

        Counts *error* as one more throttled attempt if it is a ``ModelThrottledError``;
        when it gives up on one, it adds a note to it saying why.
        """
        if self.strategy is None or not isinstance(error, ModelThrottledError):
            return None
        self.throttled += 1
        strategy = self.strategy
        if self.throttled >= strategy.max_attempts:
            if strategy.max_attempts > 1:
                error.add_note(
                    f"The model call was throttled on {self.throttled} attempts; "
                    f"ModelRetryStrategy.max_attempts is {strategy.max_attempts}."
                )
            return None
        retry_after = error.retry_after
        if retry_after is not None and not (math.isfinite(retry_after) and retry_after >= 0):
            # A hint no clock can wait out (NaN, infinite, negative): back off as if the
            # model had given none, rather than fail the call over the hint.
            logger.warning(
                "ignoring the retry_after of %r on a ModelThrottledError: not a number of seconds",
                retry_after,
            )
            retry_after = None
        if retry_after is None:
            delay = strategy.backoff(self.throttled)
        elif retry_after > strategy.max_delay:
            error.add_note(
                f"The server asked to wait {retry_after:g} s before retrying, longer "
                f"than ModelRetryStrategy.max_delay ({strategy.max_delay:g} s)."
            )
            return None
        else:
            delay = retry_after
        # INFO, as `openai` logs its own retries: expected, and handled.
        logger.info(
            "model call throttled (attempt %d of %d), retrying in %.2f s: %s",
            self.throttled,
            strategy.max_attempts,
            delay,
            error,
        )
        return delay
