"""`stageware demo`, the README's first command: it runs, and its trace tells the story."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from stageware._demo import run_demo
from stageware._host.sessions import SQLiteSessionStore
from stageware_codegen.cli import main


def test_the_demo_trace_shows_every_middleware_at_work(tmp_path: Path) -> None:
    out = io.StringIO()

    run_demo(out, tmp_path)

    trace = out.getvalue()
    assert "hid 1 e-mail address(es) in the conversation from the model" in trace
    assert "lookup_order failed (TimeoutError" in trace
    assert "refund needs a human: interrupting" in trace
    assert "-> stop_reason=interrupt" in trace
    assert "human answered 'approve'" in trace
    # The plain answer is said to be the unverified gate, and the verified one is pointed to.
    assert "takes a plain answer from whoever resumes" in trace
    assert "`stageware demo policy` shows those" in trace
    assert "hit: answered without calling the model" in trace
    assert trace.rstrip().endswith("every check passed")
    assert "jane.doe@example.com" not in trace.split("== 2.")[1]


@pytest.mark.no_journal
def test_the_session_file_holds_the_finished_conversation(tmp_path: Path) -> None:
    run_demo(io.StringIO(), tmp_path)

    store = SQLiteSessionStore(tmp_path / "sessions.sqlite")
    [session_id] = store.session_ids()
    stored = store.load(session_id)
    assert stored is not None
    snapshot = stored.snapshot
    assert snapshot["messages"][-1]["content"][0]["text"].startswith("Refunds are accepted")
    # The interrupt cycle ended with the approved refund: no answer outlives it.
    assert snapshot["interrupt_state"] == {
        "activated": False,
        "interrupts": [],
        "pending_tool_execution": None,
        "pending_input": None,
        # Each invocation that owed no resume ended an interrupt cycle, and the session
        # counts them: an answer bound to an earlier cycle releases no step of a later one.
        "cycle": 3,
    }


def test_the_command_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    assert "every check passed" in capsys.readouterr().out


def test_the_default_story_is_the_middleware_story(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "middleware"]) == 0
    assert capsys.readouterr().out.startswith("stageware demo: a support agent")


def test_a_missing_session_dir_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--session-dir", str(tmp_path / "nope")]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_a_kept_session_dir_starts_the_story_over(tmp_path: Path) -> None:
    run_demo(io.StringIO(), tmp_path)
    out = io.StringIO()

    run_demo(out, tmp_path)

    assert "it loaded 4 messages" in out.getvalue()
