"""Durable agent runs on DBOS: waits for a human, and the wake-up that ends them early.

Needs the ``dbos`` package::

    pip install 'stageware[dbos]'
"""

from __future__ import annotations

try:
    from stageware._dbos._waits import RECHECK_SECONDS, wait_for_answers
    from stageware._dbos._wake import WAKE_TOPIC, wake
except ModuleNotFoundError as _missing:
    # Only a missing engine gets the install hint; any other missing module is a real bug.
    if _missing.name is None or _missing.name.partition(".")[0] != "dbos":
        raise
    raise ImportError(
        "stageware.dbos needs the 'dbos' package: pip install 'stageware[dbos]'"
    ) from _missing

__all__ = ["RECHECK_SECONDS", "WAKE_TOPIC", "wait_for_answers", "wake"]
