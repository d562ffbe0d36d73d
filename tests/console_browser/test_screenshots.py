"""The docs' screenshots of the console: the script takes them from a real deployment, and
the committed ones are the pages it shows, at the browser's fixed size."""

from __future__ import annotations

import struct
from pathlib import Path

from .browser import WINDOW
from .screenshots import DEFAULT_FOLDER, NAMES, take

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def size(png: Path) -> tuple[int, int]:
    """A PNG's width and height, from its header."""
    data = png.read_bytes()
    assert data[:8] == PNG_SIGNATURE, f"{png} is not a PNG"
    assert data[12:16] == b"IHDR", f"{png} has no header first"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_the_script_takes_each_main_page_at_the_fixed_size(tmp_path: Path) -> None:
    shots = take(tmp_path / "images")

    assert [shot.name for shot in shots] == list(NAMES)
    assert [size(shot) for shot in shots] == [WINDOW] * len(NAMES)
    # Three pages, not one page three times.
    assert len({shot.read_bytes() for shot in shots}) == len(NAMES)


def test_the_docs_have_the_screenshots_at_the_fixed_size() -> None:
    for name in NAMES:
        assert size(DEFAULT_FOLDER / name) == WINDOW, name
