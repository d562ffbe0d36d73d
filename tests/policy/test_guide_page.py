"""The Guide page's examples run as written, in a fresh interpreter, and print what it shows.

Each ``print`` in a block is followed by the output it shows, as ``# `` comment lines; the
block's output must be exactly those lines, in order.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.readme import run_example

PAGE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "guide-outcome.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def _blocks() -> list[str]:
    return _BLOCK.findall(PAGE.read_text(encoding="utf-8"))


def _shown(block: str) -> list[str]:
    """The output the block shows: the ``# `` lines right after each ``print`` line."""
    shown: list[str] = []
    after_print = False
    for line in block.splitlines():
        if line.startswith("print("):
            after_print = True
        elif after_print and line.startswith("# "):
            shown.append(line[2:])
        else:
            after_print = False
    return shown


def test_the_page_has_its_examples() -> None:
    blocks = _blocks()
    assert len(blocks) == 4
    assert sum(1 for block in blocks if _shown(block)) == 3


@pytest.mark.parametrize("index", range(4))
def test_each_example_runs_and_prints_what_the_page_shows(index: int, tmp_path: Path) -> None:
    block = _blocks()[index]
    done = run_example(block, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == _shown(block)
