"""One generation at a time per output directory: an advisory lock on the directory.

Finishing an interrupted write and removing abandoned staging directories is only safe
if no other run is writing the same directory, so ``generate`` and ``check`` hold an
exclusive ``flock`` on the directory itself while they work: no lock file is left
behind, and the lock ends with the process that held it. A second run waits. On
Windows, which has no ``flock``, runs are not serialised.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

if sys.platform != "win32":
    import fcntl

__all__ = ["locked"]


@contextmanager
def locked(directory: Path) -> Generator[None]:
    """Hold an exclusive lock on the existing *directory* for the ``with`` block.

    Raises:
        OSError: The directory cannot be opened.
    """
    if sys.platform == "win32":
        yield
        return
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)
