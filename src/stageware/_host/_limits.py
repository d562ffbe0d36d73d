"""The invocation limit on model calls: its default, its check and the stop it ends with.

A model that keeps asking for tools would otherwise loop for as long as it is paid for.
The limit counts model calls, retries included (``AgentMetrics.model_calls``), because
each one is a request someone pays for. Once an invocation has made that many, it calls
the model no more and stops with ``stop_reason="limit_model_calls"``, the way Strands
1.62 reports its ``limits`` (``limit_turns``, ...): a result, not an exception, so the
caller keeps the metrics and the history, which is complete and valid for the next call.
"""

from __future__ import annotations

from typing import Final

from stageware._generated.payloads import StopReason

__all__ = ["DEFAULT_MAX_MODEL_CALLS", "MODEL_CALL_LIMIT_STOP", "checked_max_model_calls"]

DEFAULT_MAX_MODEL_CALLS: Final = 50
"""Room for long tool-using tasks, while a runaway loop still ends within minutes."""

MODEL_CALL_LIMIT_STOP: Final[StopReason] = "limit_model_calls"


def checked_max_model_calls(value: object) -> int | None:
    """*value* as a model-call limit: a positive ``int``, or ``None`` for no limit.

    Raises:
        TypeError: If *value* is not an ``int`` (a ``bool`` is refused too: ``True`` would
            quietly mean one call).
        ValueError: If *value* is zero or negative.
    """
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"max_model_calls must be a positive int or None (no limit), got {value!r}")
    if value < 1:
        raise ValueError(f"max_model_calls must be at least 1, got {value}; pass None for no limit")
    return value
