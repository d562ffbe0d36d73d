"""A worker killed (SIGKILL) at any point of an ordinary run loses no turn and repeats no
side effect whose result was recorded; the worker that takes over continues from there.

Each worker is a real process (``crash_worker.py``) on a real database (SQLite, Postgres).
The dying worker kills itself right after the step the test names is saved (or, for
``tool``, inside the tool after its side effect); another process waits out its lease and
continues with ``agent()`` and no prompt. The ledger the tools write counts side effects.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from stageware import StoredSession

from .crash_worker import ANSWER, PROMPT, SESSION
from .stores import StoreSpec, load_stored

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def store_spec(shared_spec: StoreSpec) -> str:
    return shared_spec.to_json()


def run(*args: str, killed: bool = False) -> dict[str, Any]:
    process = subprocess.run(
        [sys.executable, "-m", "tests.host.sessions.crash_worker", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if killed:
        assert process.returncode == -signal.SIGKILL, (
            f"the worker was not killed ({process.returncode}):\n{process.stdout}{process.stderr}"
        )
        return {}
    assert process.returncode == 0, f"worker failed ({process.returncode}):\n{process.stderr}"
    report: dict[str, Any] = json.loads(process.stdout.strip().splitlines()[-1])
    return report


def load(spec: str) -> StoredSession:
    return load_stored(spec, SESSION)


def side_effects(ledger: Path) -> list[str]:
    lines = ledger.read_text().splitlines() if ledger.exists() else []
    return sorted(line.split(" by ")[0] for line in lines)


def outline(stored: StoredSession) -> list[str]:
    """The history, one entry a message: who wrote it and what it holds."""
    entries: list[str] = []
    for message in stored.snapshot["messages"]:
        parts: list[str] = []
        for block in message["content"]:
            if "text" in block:
                parts.append(block["text"])
            elif "toolUse" in block:
                parts.append(f"call {block['toolUse']['toolUseId']}")
            elif "toolResult" in block:
                result = block["toolResult"]
                texts = [part["text"] for part in result["content"] if "text" in part]
                parts.append(f"result {result['toolUseId']} {result['status']} {texts}")
        entries.append(f"{message['role']}: {'; '.join(parts)}")
    return entries


def recorded_prompt(stored: StoredSession) -> str:
    """The prompt as the session records it: in the history, or held back by the claim."""
    messages = stored.snapshot["messages"]
    if not messages:
        messages = stored.snapshot["interrupt_state"]["pending_input"]["messages"]
    return messages[0]["content"][0]["text"]  # pyright: ignore[reportTypedDictNotRequiredAccess]


FINISHED = [
    f"user: {PROMPT}",
    "assistant: call t1; call t2",
    "user: result t1 success ['refunded']; result t2 success ['order 7: paid']",
    f"assistant: {ANSWER}",
]

# (point, side effects once the takeover finished, model calls the takeover made)
CASES = [
    # The prompt is recorded: the takeover asks the model, which calls both tools.
    ("input", ["lookup 7", "refund 7"], 2),
    # The model turn is recorded: the takeover runs both calls, then asks for the answer.
    ("turn", ["lookup 7", "refund 7"], 1),
    # The refund ran but its result was not recorded: it runs again (documented).
    ("tool", ["lookup 7", "refund 7", "refund 7"], 1),
    # The refund's result was recorded, the lookup was still running: only it runs.
    ("result", ["lookup 7", "refund 7"], 1),
    # The answer was recorded: the takeover returns it without asking the model.
    ("answer", ["lookup 7", "refund 7"], 0),
]


@pytest.mark.parametrize(("point", "effects", "model_calls"), CASES, ids=[c[0] for c in CASES])
def test_a_takeover_continues_a_run_killed_at_each_point(
    store_spec: str, tmp_path: Path, point: str, effects: list[str], model_calls: int
) -> None:
    ledger = tmp_path / "ledger.txt"
    run("run", store_spec, str(ledger), point, killed=True)
    dead = load(store_spec)
    assert dead.lease is not None  # the dead worker's, never released
    assert recorded_prompt(dead) == PROMPT  # the turn is not lost

    report = run("continue", store_spec, str(ledger))

    assert report["text"] == ANSWER
    assert report["stop_reason"] == "end_turn"
    assert report["model_calls"] == model_calls
    assert side_effects(ledger) == effects
    finished = load(store_spec)
    assert outline(finished) == FINISHED
    assert finished.lease is None
    assert finished.snapshot["interrupt_state"]["pending_tool_execution"] is None


def test_a_retried_prompt_is_refused_until_the_run_is_continued(
    store_spec: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.txt"
    run("run", store_spec, str(ledger), "result", killed=True)
    dead = load(store_spec)

    # The client never got its answer and sends the prompt again, to another worker.
    retried = run("retry", store_spec, str(ledger))

    assert retried["error"] == "SessionUnfinishedError"
    assert "agent() and no prompt" in retried["message"]
    assert retried["model_calls"] == 0
    refused = load(store_spec)
    assert (refused.version, outline(refused)) == (dead.version, outline(dead))
    assert side_effects(ledger) == ["refund 7"]

    # Continued, the run finishes once; then the prompt is a new turn again.
    assert run("continue", store_spec, str(ledger))["text"] == ANSWER
    assert outline(load(store_spec)) == FINISHED
    assert run("retry", store_spec, str(ledger)) == {"error": None, "model_calls": 2}
    assert side_effects(ledger) == ["lookup 7", "lookup 7", "refund 7", "refund 7"]
