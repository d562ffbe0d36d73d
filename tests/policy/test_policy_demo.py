"""`stageware demo policy`: it runs, its trace shows every outcome, and it fails loudly
when one of its claims stops holding."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from stageware._demo import STORIES
from stageware._demo.policy import DEMO_MIDDLEWARE, _middleware
from stageware._demo.policy._middleware import RefundLimitSettings
from stageware.policy import MiddlewareDef, PolicyEnv, ToolCallEvent
from stageware_codegen.cli import main

ROOT = Path(__file__).resolve().parents[2]

# One line per claim the brief makes, as the trace prints it.
KEY_LINES = (
    "input.received  redact_pii        baseline   continue (modified)",
    "masked 1 email, 1 card",
    "checked: the model saw [email] and [card], never the address or the card number",
    "tool.before     refund_limit      guardrail  block",
    "refund of $1,250.00 on order 2001 is over the $1,000.00 limit",
    "checked: the refund tool never ran, and refund_approval was never asked",
    "tool.before     refund_approval   platform   suspend",
    "restart: a new Agent, with the policy loaded again, on the same sessions.sqlite",
    "checked: the $420.00 refund ran exactly once after the approval",
    "input.received  legal_escalation  app        escalate",
    "-> stop_reason=escalated",
    "model.response  plain_answers     platform   retry",
    "model.response  plain_answers     platform   continue (attempt 2)",
    "model.response  no_promises       platform   guide",
    "checked: the model was told why, at the end of the request that asked again",
    "stream.chunk    stream_guard      guardrail  block",
    'the caller received: "One moment, Jane. Let me check. "',
    "error: raised ConnectionError: survey service https://surveys.example.com/v1 is unreachable",
    "checked: the customer got an answer anyway",
)


def test_the_command_shows_every_outcome_and_passes_its_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "policy", "--session-dir", str(tmp_path)]) == 0

    out = capsys.readouterr().out
    missing = [line for line in KEY_LINES if line not in out]
    assert missing == []
    assert out.rstrip().endswith("every check passed")
    assert (tmp_path / "sessions.sqlite").is_file()


def test_the_command_runs_as_a_program_and_logs_nothing_beside_its_trace() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "stageware_codegen.cli", "demo", "policy"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    assert all(line in completed.stdout for line in KEY_LINES)
    # Nothing that varies from run to run but the durations, which no check reads.
    assert "tmp" not in completed.stdout


def test_a_kept_session_dir_starts_the_story_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "policy", "--session-dir", str(tmp_path)]) == 0
    first = capsys.readouterr().out

    assert main(["demo", "policy", "--session-dir", str(tmp_path)]) == 0

    assert _without_durations(capsys.readouterr().out) == _without_durations(first)


def test_a_claim_that_stops_holding_fails_the_demo(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    class NoLimit:
        """A refund limit that lets everything through."""

        def __init__(self, settings: RefundLimitSettings) -> None:
            self.settings = settings

        async def __call__(self, event: ToolCallEvent, env: PolicyEnv) -> None:
            return None

    # The spec names the module attribute, so the demo loads the lenient one.
    lenient = dataclasses.replace(_middleware.refund_limit, target=NoLimit)
    monkeypatch.setattr(_middleware, "refund_limit", lenient)

    assert main(["demo", "policy"]) == 2

    err = capsys.readouterr().err
    assert err == (
        "stageware demo policy: check failed: expected the $1,250.00 refund to be blocked by "
        "refund_limit, got stop_reason=interrupt (halt: None)\n"
    )


def test_the_command_line_offers_every_story(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["demo", "--help"])

    assert "{" + ",".join(STORIES) + "}" in capsys.readouterr().out


def test_every_demo_middleware_is_declared_and_configured_with_a_sample() -> None:
    for declared in DEMO_MIDDLEWARE:
        assert isinstance(declared, MiddlewareDef)
        assert (declared.config is None) == (declared.sample is None), declared.name
        declared.build(declared.sample)


def _without_durations(trace: str) -> str:
    """The trace without the duration column, the one part that may vary between runs."""
    return re.sub(r" +(?:<1ms|\d+ms)(?=  |$)", "", trace, flags=re.MULTILINE)
