"""What a model reads of a Google docstring that strays from the agents guide's example.

The cases the line parser before ``docstring_parser`` read, and which a model must keep
reading the same way: section headers in any case, sections that are for the programmer
only (``Note:``, ``Warning:``, ``See Also:``, ...) kept out of the description, a type with
a colon in it, an odd entry that must not lose the others, paragraphs inside an entry.
"""

from __future__ import annotations

from typing import Literal

import pytest

from stageware import tool
from stageware._host.tools._docstring import parse_docstring

ADDRESS = ("Fetch a page.", {"url": "The address."})

CASES: dict[str, tuple[str, tuple[str, dict[str, str]]]] = {
    "lower-case header": ("Fetch a page.\n\nargs:\n    url: The address.\n", ADDRESS),
    "upper-case header": ("Fetch a page.\n\nARGS:\n    url: The address.\n", ADDRESS),
    "two-word header in sentence case": (
        "Fetch a page.\n\nKeyword arguments:\n    url: The address.\n",
        ADDRESS,
    ),
    "note before args": (
        "Fetch a page.\n\nNote:\n    Internal: reads the admin token.\n\n"
        "Args:\n    url: The address.\n",
        ADDRESS,
    ),
    "notes": (
        "Fetch a page.\n\nNotes:\n    Uses API key sk-live-123 from env.\n\n"
        "Args:\n    url: The address.\n",
        ADDRESS,
    ),
    "warning": ("Fetch a page.\n\nWarning:\n    Slow.\n\nArgs:\n    url: The address.\n", ADDRESS),
    "todo": (
        "Fetch a page.\n\nTodo:\n    Retry on 5xx.\n\nArgs:\n    url: The address.\n",
        ADDRESS,
    ),
    "references": (
        "Fetch a page.\n\nReferences:\n    RFC 9110\n\nArgs:\n    url: The address.\n",
        ADDRESS,
    ),
    "see also": (
        "Fetch a page.\n\nSee Also:\n    other_tool\n\nArgs:\n    url: The address.\n",
        ADDRESS,
    ),
    "caution and tip": (
        "Fetch a page.\n\nCaution:\n    Deletes rows.\n\nTip:\n    Be quick.\n\n"
        "Attention:\n    Really.\n\nArgs:\n    url: The address.\n",
        ADDRESS,
    ),
    "type with a colon": (
        'Fetch a page.\n\nArgs:\n    url (Literal["a:b"]): The address.\n',
        ADDRESS,
    ),
    "an entry without a colon joins the one above": (
        "Fetch a page.\n\nArgs:\n    url: The address.\n    depth How deep, in links.\n",
        ("Fetch a page.", {"url": "The address. depth How deep, in links."}),
    ),
    "paragraphs inside an entry": (
        "Fetch a page.\n\nArgs:\n    url: The address.\n\n        Second paragraph.\n"
        "    depth: How deep.\n",
        ("Fetch a page.", {"url": "The address.\n\nSecond paragraph.", "depth": "How deep."}),
    ),
    "starred names": (
        "Fetch a page.\n\nArgs:\n    url: The address.\n    **options: More.\n",
        ("Fetch a page.", {"url": "The address.", "options": "More."}),
    ),
    "an unknown header stays in the description": (
        "Look up an order.\n\nStatus values:\n    open, closed.\n\nArgs:\n    url: The address.\n",
        ("Look up an order.\n\nStatus values:\n    open, closed.", {"url": "The address."}),
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_google_docstring_reads_as_before(case: str) -> None:
    text, expected = CASES[case]
    assert parse_docstring(text) == expected


def test_a_tool_whose_documented_type_has_a_colon_is_decorated() -> None:
    def move(mode: Literal["fast:1", "slow:2"]) -> str:
        """Move the arm.

        Args:
            mode (Literal["fast:1", "slow:2"]): The speed profile.
        """
        return mode

    spec = tool(move).tool_spec
    assert spec["description"] == "Move the arm."
    assert spec["inputSchema"]["json"]["properties"]["mode"]["description"] == "The speed profile."


def test_a_note_for_the_programmer_is_not_in_the_tool_description() -> None:
    @tool
    def lookup_order(order_id: str) -> str:
        """Look up an order.

        Note:
            Authenticates with the ops token from OPS_TOKEN; never tell the user.

        Args:
            order_id: The order number.
        """
        return order_id

    assert lookup_order.tool_spec["description"] == "Look up an order."


def test_every_title_the_google_reader_knows_is_read_in_any_case() -> None:
    from docstring_parser.google import DEFAULT_SECTIONS

    from stageware._host.tools._docstring import _DEFAULT_TITLES

    assert {section.title for section in DEFAULT_SECTIONS} == set(_DEFAULT_TITLES)
