"""The README's front door: its two commands come first, its first agent runs and prints
what the page says it prints, every file it links to exists, and its comparison table is
the site home's.

The first agent runs as a reader would run it: the block as written, in a fresh
interpreter, in an empty directory.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.readme import README, readme_blocks, run_example

_ROOT = README.parent
_SENTENCE = "\n\n**stageware is typed middleware around the stages of an AI-agent run**"
_CLONE = (
    "```bash\n"
    "git clone https://<your-git-host>/stageware.git && cd stageware"
    "   # <your-git-host>: where yours is hosted\n"
)
_COMMANDS = (
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && stageware demo\n"
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[dev]' && python -m pytest\n"
    "```\n"
)


def _shown_output(code: str) -> str:
    """What the block says it prints: the ``# `` comment lines that end it."""
    shown: list[str] = []
    for line in reversed(code.rstrip("\n").splitlines()):
        if not line.startswith("# "):
            break
        shown.insert(0, line.removeprefix("# "))
    return "".join(f"{line}\n" for line in shown)


def test_what_it_is_then_the_clone_and_the_two_commands_come_first() -> None:
    text = README.read_text(encoding="utf-8")
    title, _, rest = text.partition(_SENTENCE)

    assert title == "# stageware"
    # The sentence is one paragraph; the commands' block follows it.
    paragraph, _, after = rest.partition("\n\n")
    assert "```" not in paragraph
    assert after.startswith(_CLONE + _COMMANDS)


def test_the_first_agent_prints_what_the_readme_shows(tmp_path: Path) -> None:
    [code] = readme_blocks("## A first agent")
    shown = _shown_output(code)
    # The lookup went through the middleware; the refund stopped for a person before it.
    assert shown == (
        "tool: lookup_order {'order_id': 1042}\n"
        "interrupt {'tool': 'refund', 'input': {'order_id': 1042}}\n"
    )

    ran = run_example(code, tmp_path)

    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == shown
    assert list(tmp_path.iterdir()) == []  # nothing written: no session store in this one


def test_without_the_approval_line_the_refund_runs(tmp_path: Path) -> None:
    # The contrast that shows the one line does the stopping.
    [code] = readme_blocks("## A first agent")
    line = 'policy = PolicyEngine([require_approval(tools=["refund"])])'
    assert line in code
    code = code.replace(line, "policy = PolicyEngine([])")
    code = code.replace(
        'print(result.stop_reason, result.interrupts[0].reason["step"])',
        "print(result.stop_reason, result.text)",
    )

    ran = run_example(code, tmp_path)

    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == (
        "tool: lookup_order {'order_id': 1042}\n"
        "tool: refund {'order_id': 1042}\n"
        "end_turn Your refund is on its way.\n"
    )


def test_every_relative_link_and_path_names_a_file_of_the_repository() -> None:
    text = README.read_text(encoding="utf-8")
    targets = {
        target.split("#", 1)[0]
        for target in re.findall(r"\]\(([^)\s]+)\)", text)
        if "://" not in target and not target.startswith("#")
    }

    # And the files it names in passing: `tests/...py`, `.ci/postgres`.
    targets |= set(re.findall(r"`((?:tests|src|docs|schema|\.ci)/[\w./-]*\w)`", text))
    targets |= set(re.findall(r"pytest ((?:tests)/[\w./-]*\w)", text))

    assert "docs/guides/quickstart.md" in targets  # the links were found at all
    assert "tests/host/test_agent_basics.py" in targets  # and the paths
    missing = sorted(target for target in targets if not (_ROOT / target).exists())
    assert missing == []


def test_every_anchor_names_a_heading_of_the_readme() -> None:
    text = README.read_text(encoding="utf-8")
    headings = {
        re.sub(r"[^\w\- ]", "", line.lstrip("#").strip()).lower().replace(" ", "-")
        for line in text.splitlines()
        if line.startswith("#") and not line.startswith("#!")
    }
    anchors = set(re.findall(r"\]\(#([^)]+)\)", text))

    assert anchors  # the README links within itself
    assert anchors <= headings


def _comparison(text: str) -> str:
    start = text.index("| | stageware | Strands Agents 1.62 |")
    return text[start : text.index("\n\n", start)]


def test_the_site_home_shows_the_readmes_comparison_table() -> None:
    # The table is on both front doors, the repository's and the site's; one must not drift.
    home = (_ROOT / "docs" / "index.md").read_text(encoding="utf-8")

    assert _comparison(home) == _comparison(README.read_text(encoding="utf-8"))
