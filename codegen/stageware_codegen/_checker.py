"""A Python subprocess started early and asked later, answering on marked lines.

Two checks run in a fresh interpreter, so that what they import cannot disturb the
generator's own imports: the external types (:mod:`.resolve.external_types`) and the
import of the staged package (:mod:`.write.import_check`). Starting an interpreter and
importing what it needs costs more than the check itself, so each is started as soon as
the pipeline starts, warms up beside the generator's own work (there are cores to spare),
then waits for its one request on stdin. A checker that is not asked (nothing to check,
or the pipeline failed first) is killed and reaped when its ``with`` block ends.

The subprocess answers with lines that start with a marker and a tab, so that output an
imported module prints cannot be mistaken for an answer.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from types import TracebackType
from typing import Self

from ._errors import OutputError

__all__ = ["Answer", "Checker"]

_TIMEOUT = 120.0


@dataclass(frozen=True, slots=True)
class Answer:
    """What a checker said.

    Attributes:
        reports: The text after the marker of every marked line, in order.
        returncode: The subprocess's exit status.
        error: The last line of its stderr, else ``exit status N``.
    """

    reports: tuple[str, ...]
    returncode: int
    error: str


class Checker:
    """``python -B`` *arguments*, running from construction until asked or closed.

    Args:
        arguments: The interpreter's arguments after ``-B`` (``-c`` or ``-m`` and more);
            the subprocess reads one request from stdin.
        marker: The first field of the lines that answer.
        failure: How a failure to run is reported: ``"{failure}: {reason}"``.
    """

    def __init__(self, arguments: list[str], marker: str, failure: str) -> None:
        self.command = [sys.executable, "-B", *arguments]
        """The subprocess's command line."""
        self._marker = marker
        self._failure = failure
        self._process: subprocess.Popen[str] | None = None
        self._error: OSError | None = None
        try:
            self._process = subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                encoding="utf-8",
            )
        except OSError as exc:
            self._error = exc

    def ask(self, request: str) -> Answer:
        """Send *request* (one line), wait for the subprocess to end; a checker is asked once.

        Raises:
            OutputError: The subprocess could not run or did not end in time.
        """
        process, self._process = self._process, None
        if process is None:
            reason = self._error if self._error is not None else "the checker was used up"
            raise OutputError(f"{self._failure}: {reason}")
        try:
            stdout, stderr = process.communicate(request + "\n", timeout=_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired) as exc:
            _end(process)
            raise OutputError(f"{self._failure}: {exc}") from None
        reports = tuple(
            report
            for line in stdout.splitlines()
            for marker, _, report in [line.partition("\t")]
            if marker == self._marker
        )
        detail = stderr.strip().splitlines()
        error = detail[-1] if detail else f"exit status {process.returncode}"
        return Answer(reports, process.returncode, error)

    def close(self) -> None:
        """Kill the subprocess if it was not asked, and reap it."""
        process, self._process = self._process, None
        if process is not None:
            _end(process)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _end(process: subprocess.Popen[str]) -> None:
    """Kill *process*, wait for it and close its pipes: no zombie, no open descriptor."""
    process.kill()
    process.communicate()
