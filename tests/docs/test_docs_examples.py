"""Every code block of README.md and the docs pages runs, or names the test that runs it.

Each fenced block is a test of its own, its id the page and the line of its opening fence
(``docs/guides/agents.md:6``), so a failure names where to look:

- ``python``: run as written by a fresh interpreter, in an empty temporary directory, and
  must exit 0 within a minute. When every ``print(`` line of it (at the top level) is
  followed by ``# ...`` comment lines, or ends in a ``  # ...`` comment, those comments
  are what it must print.
- A block preceded by ``<!-- docs-test: continues -->`` continues the ``python`` block
  before it on the page: the two run as one program (and so on back, for a chain).
- A block preceded by ``<!-- docs-test: run by tests/PATH.py -->`` is not run here: it
  needs what a fresh interpreter lacks (a server, PostgreSQL, a DBOS worker, names bound
  by the test, a plugin installed), or a test of its section already runs it and checks
  what it prints. That file must exist and find the block's section, by naming its page
  or one of the headings the block is under (in full, or as far as its colon).
- ``yaml``, ``toml`` and ``json`` blocks are parsed.
- ``bash``, ``sh``, ``console``, ``text``, ``sql`` and unlabelled blocks are not run: they
  are commands to type, output, layouts, and SQL for a server of the reader's. Any other
  language fails here, so that a new kind of block gets a decision.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest
import yaml

from tests.readme import ROOT, headings, is_fence, pages

_MARKER: Final = re.compile(r"<!--\s*docs-test:\s*(.*?)\s*-->")
_RUN_BY: Final = re.compile(r"run by (tests/\S+\.py)")
_NOT_RUN: Final = frozenset({"", "bash", "sh", "console", "text", "sql"})
_TIMEOUT: Final = 60


@dataclass(frozen=True)
class Block:
    """A fenced code block of a page.

    Attributes:
        page: The page, relative to the repository (``docs/guides/agents.md``).
        line: The line of its opening fence, counted from 1.
        language: What follows the opening backticks (``python``), or ``""``.
        code: Its text, without the fences and without its list item's indentation.
        marker: What its ``<!-- docs-test: ... -->`` line says, or ``None``.
        under: The titles of the headings it is under, outermost first.
        before: The ``python`` block before it on the page, if any.
    """

    page: str
    line: int
    language: str
    code: str
    marker: str | None
    under: tuple[str, ...]
    before: Block | None

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def _blocks_of(path: Path) -> list[Block]:
    page = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    titles = {index: (level, title) for index, level, title in headings(lines)}
    blocks: list[Block] = []
    stack: list[tuple[int, str]] = []
    previous: Block | None = None
    index = 0
    while index < len(lines):
        if index in titles:
            level, title = titles[index]
            stack = [*(entry for entry in stack if entry[0] < level), (level, title)]
        if not is_fence(lines[index]):
            index += 1
            continue
        opening = lines[index]
        indent = opening[: len(opening) - len(opening.lstrip(" "))]
        end = next((n for n in range(index + 1, len(lines)) if is_fence(lines[n])), None)
        if end is None:
            raise ValueError(f"{page}:{index + 1}: the code block is never closed")
        above = next((line for line in reversed(lines[:index]) if line.strip()), "")
        marked = _MARKER.fullmatch(above.strip())
        block = Block(
            page=page,
            line=index + 1,
            language=opening.strip().removeprefix("```").strip(),
            code="".join(line.removeprefix(indent) for line in lines[index + 1 : end]),
            marker=marked.group(1) if marked else None,
            under=tuple(title for _, title in stack),
            before=previous,
        )
        blocks.append(block)
        if block.language == "python":
            previous = block
        index = end + 1
    return blocks


BLOCKS: Final = [block for path in pages() for block in _blocks_of(path)]


def _program(block: Block) -> str:
    """The code *block* runs as: the blocks it continues first."""
    if block.marker != "continues":
        return block.code
    if block.before is None:
        raise AssertionError(f"{block.id}: continues, but no python block comes before it")
    if block.before.marker is not None and block.before.marker != "continues":
        raise AssertionError(
            f"{block.id}: continues {block.before.id}, which is {block.before.marker!r}"
        )
    return _program(block.before) + "\n" + block.code


def printed_as_commented(code: str) -> str | None:
    """What *code*'s comments say it prints: the ``  # `` comment that ends each top-level
    ``print(`` line, or the ``# `` lines right after it; ``None`` when a print has neither
    (the block then need only run)."""
    lines = code.splitlines()
    said: list[str] = []
    prints = 0
    for n, line in enumerate(lines):
        if not line.startswith("print("):
            continue
        prints += 1
        if "  # " in line:
            said.append(line.split("  # ", 1)[1])
            continue
        after = [text.removeprefix("# ") for text in _comment_run(lines[n + 1 :])]
        if not after:
            return None
        said.extend(after)
    return "\n".join(said) + "\n" if prints else None


def _comment_run(lines: list[str]) -> list[str]:
    run: list[str] = []
    for line in lines:
        if not line.startswith("# "):
            break
        run.append(line)
    return run


def _run_python(block: Block, directory: Path) -> None:
    program = _program(block)
    try:
        ran = subprocess.run(
            [sys.executable, "-c", program],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{block.id}: still running after {_TIMEOUT} s")
    assert ran.returncode == 0, f"{block.id}: exit status {ran.returncode}\n{ran.stderr}"
    expected = printed_as_commented(program)
    if expected is not None:
        assert ran.stdout == expected, f"{block.id}: prints other than its comments say"


def _check_run_by(block: Block, test: str) -> None:
    path = ROOT / test
    assert path.is_file(), f"{block.id}: {test}, named as the test that runs it, is missing"
    text = path.read_text(encoding="utf-8")
    # A heading is named in full, or as far as its colon ("Dead workers" for "Dead workers:
    # the liveness lock and the watcher"), as find_section takes the start of a title.
    named = [block.page, *(title.split(":")[0] for title in block.under)]
    assert any(name in text for name in named), (
        f"{block.id}: {test} finds neither the page nor a heading the block is under "
        f"({', '.join(repr(name) for name in named)})"
    )


@pytest.mark.parametrize("block", BLOCKS, ids=[block.id for block in BLOCKS])
def test_the_block_runs_or_names_its_test(block: Block, tmp_path: Path) -> None:
    marker = block.marker
    if marker is not None and marker != "continues":
        run_by = _RUN_BY.fullmatch(marker)
        assert run_by, f"{block.id}: unknown marker {marker!r} (run by tests/PATH.py, continues)"
        _check_run_by(block, run_by.group(1))
    elif block.language == "python":
        _run_python(block, tmp_path)
    elif block.language == "yaml":
        list(yaml.safe_load_all(block.code))
    elif block.language == "toml":
        tomllib.loads(block.code)
    elif block.language == "json":
        json.loads(block.code)
    else:
        assert block.language in _NOT_RUN, f"{block.id}: a {block.language!r} block: run it?"


# --- The checks themselves -------------------------------------------------------------------


_PAGE = """# A page

## Printing

Text.

```python
x = 2
print(x + 1)
# 3
```

- An item:

  <!-- docs-test: continues -->

  ```python
  print(x * 10)  # 20
  ```

```yaml
a: [1
```
"""


def test_blocks_carry_their_place_headings_marker_and_predecessor(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(_PAGE, encoding="utf-8")

    first, second, third = _blocks_of(page)

    assert (first.line, first.language, first.under, first.marker) == (
        7,
        "python",
        ("A page", "Printing"),
        None,
    )
    assert (second.line, second.code, second.marker) == (17, "print(x * 10)  # 20\n", "continues")
    assert second.before == first
    assert _program(second) == "x = 2\nprint(x + 1)\n# 3\n\nprint(x * 10)  # 20\n"
    assert third.language == "yaml"
    with pytest.raises(yaml.YAMLError):
        list(yaml.safe_load_all(third.code))


def test_a_continued_block_must_print_what_both_blocks_say(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(_PAGE, encoding="utf-8")
    _, second, _ = _blocks_of(page)
    _run_python(second, tmp_path)

    wrong = page.read_text(encoding="utf-8").replace("# 20", "# 21")
    page.write_text(wrong, encoding="utf-8")
    _, second, _ = _blocks_of(page)
    with pytest.raises(AssertionError, match="prints other than its comments say"):
        _run_python(second, tmp_path)


def test_a_block_that_fails_names_its_place(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```python\nraise SystemExit(3)\n```\n", encoding="utf-8")
    [block] = _blocks_of(page)

    with pytest.raises(AssertionError, match=r"page\.md:1: exit status 3"):
        _run_python(block, tmp_path)


def test_a_print_without_its_output_only_needs_to_run() -> None:
    assert printed_as_commented("print(1)\nx = 2\n") is None
    assert printed_as_commented("x = 2\n") is None
    assert printed_as_commented("print(1)\n# 1\n# and 2\n") == "1\nand 2\n"


def test_an_unclosed_block_is_an_error_naming_its_line(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# T\n\n```python\nx = 1\n", encoding="utf-8")

    with pytest.raises(ValueError, match=r"page\.md:3: the code block is never closed"):
        _blocks_of(page)


def test_a_run_by_test_must_exist_and_find_the_section(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# Tracing\n\n<!-- docs-test: run by tests/telemetry/test_readme.py -->\n\n"
        "```python\n```\n",
        encoding="utf-8",
    )
    [block] = _blocks_of(page)
    _check_run_by(block, "tests/telemetry/test_readme.py")

    with pytest.raises(AssertionError, match="is missing"):
        _check_run_by(block, "tests/telemetry/test_nothing.py")
    with pytest.raises(AssertionError, match="finds neither the page nor a heading"):
        _check_run_by(block, "tests/host/test_demo.py")
