"""Paths as the generator shows them: relative to a base directory, in posix form.

Generated banners, diff headers and messages name files this way, so that output and
messages do not depend on the machine or the directory the command ran in.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["relative_path"]


def relative_path(path: Path, base: Path) -> str:
    """*path* relative to *base* in posix form, or *path* as given if it lies outside."""
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return path.as_posix()
