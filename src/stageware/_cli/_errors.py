"""How a policy command fails: ``CommandError``, reported as one line with exit status 2."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, TextIO

__all__ = ["EXIT_ERROR", "EXIT_OK", "CommandError", "reported"]

EXIT_OK: Final = 0
EXIT_ERROR: Final = 2


class CommandError(Exception):
    """A command could not do what it was asked; the message says why, in one line."""


def reported(command: str, err: TextIO, action: Callable[[], None]) -> int:
    """Run *action*; return the exit status, with a failure as one line on *err*.

    A ``CommandError`` and a store's ``SessionError`` (an unknown id, a refused claim, a
    store that cannot be reached) are the command's to report: ``command: problem``.
    Anything else is a bug, and keeps its traceback.
    """
    # Imported here: the command line imports this module to build its parser, and the
    # stores load the host.
    from stageware._host.sessions import SessionError

    try:
        action()
    except (CommandError, SessionError) as error:
        err.write(f"{command}: {' '.join(str(error).split())}\n")
        return EXIT_ERROR
    return EXIT_OK
