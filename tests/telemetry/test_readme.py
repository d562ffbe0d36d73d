"""The tracing guide's example runs as written and prints the spans it promises."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.readme import readme_blocks


def _example() -> str:
    return readme_blocks("# Tracing\n")[0]


def test_the_console_example_prints_the_run_s_spans(tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(_example(), encoding="utf-8")
    completed = subprocess.run(
        [sys.executable, str(script)], check=True, capture_output=True, text=True
    )
    # ConsoleSpanExporter prints one JSON object per span, as each span ends.
    decoder = json.JSONDecoder()
    spans: list[dict[str, object]] = []
    text = completed.stdout.strip()
    while text:
        span, end = decoder.raw_decode(text)
        spans.append(span)
        text = text[end:].strip()
    assert [span["name"] for span in spans] == [
        "chat scripted",
        "agent_pass",
        "invoke_agent greeter",
    ]
