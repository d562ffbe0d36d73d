"""A PostgreSQL server of a test module's own, to restart and to stall.

The outage tests restart their server (``pg_ctl restart``) and stall it (``SIGSTOP`` to
the postmaster and every backend, as a partition or a frozen machine would look to a
client, then ``SIGCONT``). Done to the server the other tests share, that would break
them, so these tests start one more with ``.ci/postgres start`` in a directory of their
own, and stop it at the end.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import subprocess
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from stageware.postgres import PostgresSessionStore

SCRIPT: Final = Path(__file__).resolve().parents[3] / ".ci" / "postgres"

STATEMENT_TIMEOUT: Final = 1.0
"""The outage tests' stores: the default, which a store call's bound follows."""
BOUND: Final = 3.0
"""How long a call may take in those tests: its bound is statement_timeout + 0.5 s, and
the machines that run them are noisy."""


def server_binaries_present() -> bool:
    """Whether ``.ci/postgres`` would find ``initdb`` and ``pg_ctl`` without installing."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        found = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        candidates.insert(0, found.stdout.strip())
    initdb = shutil.which("initdb")
    if initdb is not None:
        candidates.append(os.path.dirname(initdb))
    return any(
        os.access(os.path.join(folder, "initdb"), os.X_OK)
        and os.access(os.path.join(folder, "pg_ctl"), os.X_OK)
        for folder in candidates
        if folder
    )


@dataclass(frozen=True)
class PrivateServer:
    """A running throwaway server: its URL and its directory."""

    url: str
    directory: Path

    @classmethod
    def start(cls, directory: Path) -> PrivateServer:
        found = subprocess.run(
            [str(SCRIPT), "start", str(directory)], capture_output=True, text=True, check=False
        )
        if found.returncode != 0:
            raise RuntimeError(f".ci/postgres start failed: {found.stderr}")
        return cls(found.stdout.strip(), directory)

    def stop(self) -> None:
        subprocess.run([str(SCRIPT), "stop", str(self.directory)], capture_output=True, check=False)

    def restart(self) -> None:
        """Restart the server, fast: every connection to it ends; back when this returns."""
        subprocess.run(
            [str(SCRIPT), "restart", str(self.directory)], capture_output=True, check=True
        )

    @contextlib.contextmanager
    def stalled(self) -> Generator[None, None, None]:
        """Stop every process of the server for the block: it accepts, and never answers."""
        # The postmaster first, so that it starts no new backend meanwhile; a backend that
        # exits between the listing and its signal needs none.
        processes = self._processes()
        try:
            for pid in processes:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGSTOP)
            yield
        finally:
            for pid in processes:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)

    def _processes(self) -> list[int]:
        """The postmaster and its children (backends, background workers)."""
        postmaster = int((self.directory / "data" / "postmaster.pid").read_text().split()[0])
        children: list[int] = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError):
                # The command may hold spaces and parentheses: the fields after its last ")".
                fields = stat.read_text().rpartition(")")[2].split()
                if int(fields[1]) == postmaster:
                    children.append(int(stat.parent.name))
        return [postmaster, *children]


@contextlib.contextmanager
def bounded_store(server: PrivateServer) -> Generator[PostgresSessionStore, None, None]:
    """A store on *server*, in a schema of its own, with the outage tests' time bound."""
    # Imported here: the shared conftest imports this module without needing psycopg.
    from stageware.postgres import PostgresSessionStore

    from .stores import fresh_schema_name

    with PostgresSessionStore(
        server.url, schema=fresh_schema_name(), min_size=2, statement_timeout=STATEMENT_TIMEOUT
    ) as store:
        yield store
