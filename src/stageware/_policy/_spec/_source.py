"""The bytes of a spec file, read within a bound.

A spec is a short file written by hand, yet it is read from a path that may be anything:
the pure-Python YAML parser reads some 100 KB a second, so a 60 MB file takes minutes,
``/dev/zero`` never ends and a FIFO without a writer blocks forever. So only regular
files are read, and at most :data:`MAX_SPEC_BYTES` of them: one byte more tells that the
file is over the bound without reading the rest.
"""

from __future__ import annotations

import os
import stat

from ._document import Problem

__all__ = ["MAX_SPEC_BYTES", "read_source"]

MAX_SPEC_BYTES = 256 * 1024
"""The largest spec file read, 256 KiB: thousands of entries, yet a few seconds of parsing."""

_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def read_source(path: str | os.PathLike[str], file: str) -> bytes | Problem:
    """The content of the spec at *path*, or why it is not read (*file* names it).

    Raises:
        OSError: If it cannot be opened or read (it does not exist, or may not be read).
    """
    # Without O_NONBLOCK, opening a FIFO waits for a writer; a regular file ignores it.
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):
        os.close(descriptor)
        kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
        return Problem(file, None, (), f"is {kind}; a spec must be a regular file")
    with open(descriptor, "rb") as source:
        data = source.read(MAX_SPEC_BYTES + 1)
    if len(data) > MAX_SPEC_BYTES:
        return Problem(
            file,
            None,
            (),
            f"is larger than {MAX_SPEC_BYTES // 1024} KiB, the most a spec file may hold (a "
            "spec lists middleware and their settings, not data)",
        )
    return data
