"""Editing the schema changes the types: code written against the old schema stops checking."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import Cli

DATA = Path(__file__).parent / "data"

# Uses `tags` (renamed), `tokens_hint` as an int (retyped) and builds a context without
# `audience` (added, required). Each use is on its own line so mypy names it.
HANDLERS = """\
from __future__ import annotations

from collections.abc import AsyncIterator

from stageware import MiddlewareRegistry
from translate_api import TranslateContext, TranslateEvent, TranslateNext, TranslateStage


def label(context: TranslateContext) -> TranslateContext:
    return context.replace(tags=[*context.tags, "seen"])


def budget(context: TranslateContext) -> int:
    return context.tokens_hint + 1


def build() -> TranslateContext:
    return TranslateContext.from_host(request={"id": "1"}, text="hi")


async def passthrough(
    context: TranslateContext, next_fn: TranslateNext
) -> AsyncIterator[TranslateEvent]:
    async for event in next_fn(context):
        yield event


registry = MiddlewareRegistry()
registry.add_middleware(TranslateStage.Input, label)
registry.add_middleware(TranslateStage, passthrough)
"""


def _mypy(root: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(cache),
            "handlers.py",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )


def _generate(cli: Cli, root: Path) -> None:
    result = cli("generate", "--schema", "translate.yaml", "--output", "translate_api")
    assert result.code == 0, result.err
    assert (root / "translate_api" / "__init__.py").is_file()


def test_renamed_retyped_and_added_fields_break_old_handlers(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    schema = tmp_path / "translate.yaml"
    shutil.copy(DATA / "translate.yaml", schema)
    (tmp_path / "handlers.py").write_text(HANDLERS, encoding="utf-8")
    cache = tmp_path / ".mypy_cache"

    _generate(cli, tmp_path)
    before = _mypy(tmp_path, cache)
    assert before.returncode == 0, before.stdout + before.stderr

    text = schema.read_text(encoding="utf-8")
    text = text.replace("      tags:\n", "      labels:\n")
    text = text.replace(
        "      tokens_hint:\n        type: int\n", "      tokens_hint:\n        type: int | None\n"
    )
    text = text.replace(
        "      credentials:\n",
        "      audience:\n        type: str\n        doc: Who reads it.\n"
        "        copy: reference\n      credentials:\n",
    )
    schema.write_text(text, encoding="utf-8")
    _generate(cli, tmp_path)
    after = _mypy(tmp_path, cache)

    assert after.returncode == 1, after.stdout + after.stderr
    errors = after.stdout
    lines = HANDLERS.splitlines()
    for fragment, message in [
        (
            'context.replace(tags=[*context.tags, "seen"])',
            '"TranslateContext" has no attribute "tags"',
        ),
        ("return context.tokens_hint + 1", "Unsupported operand types"),
        ('from_host(request={"id": "1"}, text="hi")', 'Missing named argument "audience"'),
    ]:
        line = next(number for number, code in enumerate(lines, 1) if fragment in code)
        assert f"handlers.py:{line}: error: {message}" in errors, errors
