"""A small deployment, as real processes: a worker whose refunds wait for finance's
approval, and consoles answering them, each as the user it is started for.

``Deployment`` starts the worker (``worker.py``) on a session store and a DBOS system
database (SQLite files in a folder of its own, or a PostgreSQL database), and
``console(user, roles)`` starts ``stageware console`` on the same store and DBOS
database, in local mode as that user, on a free loopback port. Readiness is awaited, not
slept for: the worker's ``ready`` line, the console's first HTTP answer. Closing the
deployment ends every process it started and waits for each.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from stageware.dbos import DurableResult
from tests.dbos.pending import pending_approval
from tests.host.sessions.stores import StoreSpec, close_store, open_store

from .sso_proxy import SOURCE, SsoProxy
from .worker import DISPUTED, QUEUE, WorkerConfig

ROOT: Final = Path(__file__).resolve().parents[2]
STAGEWARE: Final = str(Path(sys.executable).parent / "stageware")
BOUND: Final = 60.0
"""How long anything is waited for: far past what it takes."""


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _end(process: subprocess.Popen[str]) -> None:
    """Stop *process* (SIGTERM, then SIGKILL if it lingers) and reap it."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(BOUND)


@dataclass
class Console:
    """A running ``stageware console`` process and the user it serves.

    Attributes:
        url: Where the browser goes: the console, or the proxy in front of it.
        direct_url: The console itself.
        secret: The key it signs its forms' tokens with (``--secret-file``).
    """

    user: str
    roles: tuple[str, ...]
    url: str
    direct_url: str
    secret: bytes
    process: subprocess.Popen[str]
    log: Path

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-4000:]


@dataclass
class Deployment:
    """The worker and the consoles of one folder's store and DBOS database."""

    folder: Path
    config: WorkerConfig
    worker: subprocess.Popen[str]
    worker_log: Path
    consoles: list[Console] = field(default_factory=list[Console])
    _proxies: list[SsoProxy] = field(default_factory=list[SsoProxy])
    _reader: threading.Thread | None = None
    # What the worker printed, as the reader thread finds it.
    _ready: bool = False
    _output_ended: bool = False
    _results: dict[str, DurableResult] = field(default_factory=dict[str, DurableResult])
    _arrived: threading.Condition = field(default_factory=threading.Condition)

    @classmethod
    @contextlib.contextmanager
    def started(
        cls, folder: Path, store: StoreSpec | None = None, dbos_url: str | None = None
    ) -> Generator[Deployment]:
        """The worker started, and ready; everything ended after.

        Its sessions are in *store*, DBOS's tables in *dbos_url*; by default both in SQLite
        files in *folder*, where the logs always are.
        """
        store = store or StoreSpec("sqlite", str(folder / "sessions.db"))
        config = WorkerConfig(
            dbos_url=dbos_url or f"sqlite:///{folder / 'dbos.db'}",
            store=store.to_json(),
            tool_log=str(folder / "tools.log"),
        )
        log = folder / "worker.log"
        with log.open("w", encoding="utf-8") as errors:
            worker = subprocess.Popen(
                [sys.executable, "-m", "tests.console_browser.worker", config.to_json()],
                cwd=ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errors,
                text=True,
            )
        deployment = cls(folder, config, worker, log)
        try:
            deployment._reader = threading.Thread(target=deployment._read_output, daemon=True)
            deployment._reader.start()
            deployment._await_ready()
            yield deployment
        finally:
            deployment.close()

    # -- the worker ------------------------------------------------------------------

    def _worker_output(self) -> str:
        return self.worker_log.read_text(encoding="utf-8", errors="replace")[-4000:]

    def _await_ready(self) -> None:
        """Wait for the worker's ``ready`` line: DBOS launched, its store open."""
        with self._arrived:
            self._arrived.wait_for(lambda: self._ready or self._output_ended, BOUND)
            assert self._ready, (
                f"the worker was not ready within {BOUND} s, or ended:\n{self._worker_output()}"
            )

    def _read_output(self) -> None:
        """Read the worker's lines to its end: first ``ready``, then the requests' ends."""
        assert self.worker.stdout is not None
        for line in self.worker.stdout:
            printed = json.loads(line)
            with self._arrived:
                if printed == {"ready": True}:
                    self._ready = True
                else:
                    result = DurableResult.from_dict(printed)
                    self._results[result.session_id] = result
                self._arrived.notify_all()
        with self._arrived:
            self._output_ended = True
            self._arrived.notify_all()

    @property
    def store(self) -> StoreSpec:
        return StoreSpec.from_json(self.config.store)

    def _start(self, session_id: str, more: str = "") -> None:
        assert self.worker.stdin is not None
        assert "\n" not in more, more
        self.worker.stdin.write(f"{session_id} {more}\n")
        self.worker.stdin.flush()

    def request_refund(self, session_id: str, more: str = "") -> str:
        """Start *session_id*'s refund request, its prompt followed by *more* (one line);
        the id of the approval it then waits on."""
        self._start(session_id, more)
        return pending_approval(self.store, session_id, timeout=BOUND)

    def request_disputed_refund(self, session_id: str) -> str:
        """Start the refund request of *session_id* (a ``dispute-`` order); the id of the
        escalation it then waits on."""
        assert session_id.startswith(DISPUTED), session_id
        self._start(session_id)
        store = open_store(self.store)
        try:
            deadline = time.monotonic() + BOUND
            while time.monotonic() < deadline:
                found = [e.id for e in store.escalations(QUEUE) if e.session_id == session_id]
                if found:
                    return found[0]
                time.sleep(0.05)
        finally:
            close_store(store)
        raise AssertionError(f"the request of {session_id!r} was not escalated in {BOUND} s")

    def result(self, session_id: str, timeout: float = BOUND) -> DurableResult:
        """How *session_id*'s request ended, once the worker printed it."""
        with self._arrived:
            self._arrived.wait_for(
                lambda: session_id in self._results or self._output_ended, timeout
            )
            assert session_id in self._results, (
                f"the request of {session_id!r} did not end within {timeout} s, or the worker "
                f"did:\n{self._worker_output()}"
            )
            return self._results[session_id]

    def finished(self, session_id: str) -> bool:
        """Whether *session_id*'s request has ended (now, without waiting)."""
        with self._arrived:
            return session_id in self._results

    def refunds(self, order: str) -> list[str]:
        """The amounts the tool refunded for *order*, one a run."""
        log = Path(self.config.tool_log)
        lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        return [amount for line in lines for o, amount in [line.split()] if o == order]

    # -- consoles --------------------------------------------------------------------

    def console(self, user: str, roles: tuple[str, ...] = ()) -> Console:
        """``stageware console`` on this store, in local mode as *user*, once it answers."""
        local = ["--auth", "local", "--user", user]
        return self._console(user, roles, local + (["--roles", ",".join(roles)] if roles else []))

    def console_behind_proxy(self, user: str, roles: tuple[str, ...]) -> Console:
        """``stageware console --auth proxy``, trusting only the single-sign-on proxy
        started in front of it (``SsoProxy``), which signs every request in as *user*.

        The ``Console``'s ``url`` is the proxy's; its ``direct_url`` the console's own.
        """
        proxy = ["--auth", "proxy", "--trusted-proxy", SOURCE]
        console = self._console(user, roles, proxy)
        sso = SsoProxy(int(console.direct_url.rsplit(":", 1)[1]), user, roles)
        self._proxies.append(sso)
        console.url = sso.url
        return console

    def _console(self, user: str, roles: tuple[str, ...], auth: list[str]) -> Console:
        # Finance resolves the escalations, as it answers the approvals.
        port = free_port()
        name = f"console-{len(self.consoles)}-{user}"
        log = self.folder / f"{name}.log"
        secret = self.folder / f"{name}.key"
        secret.write_text(secrets.token_hex(32), encoding="ascii")
        secret.chmod(0o600)
        command = [
            STAGEWARE,
            "console",
            *_store_arguments(self.store),
            "--dbos",
            self.config.dbos_url,
            *auth,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--secret-file",
            str(secret),
            "--resolvers",
            "role:finance",
        ]
        with log.open("w", encoding="utf-8") as output:
            process = subprocess.Popen(
                command,
                cwd=self.folder,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                text=True,
                env=_without_console_settings(),
            )
        url = f"http://127.0.0.1:{port}"
        console = Console(user, roles, url, url, secret.read_bytes(), process, log)
        self.consoles.append(console)
        _await_http(console)
        return console

    def close(self) -> None:
        """End every proxy and console, then the worker (its input closed: it shuts DBOS
        down)."""
        for proxy in self._proxies:
            proxy.close()
        for console in self.consoles:
            _end(console.process)
        if self.worker.poll() is None:
            with contextlib.suppress(OSError, ValueError):
                assert self.worker.stdin is not None
                self.worker.stdin.close()
            try:
                self.worker.wait(30)
            except subprocess.TimeoutExpired:
                _end(self.worker)
        if self._reader is not None:
            self._reader.join(BOUND)  # it reads to the end of the worker's output
        if self.worker.stdout is not None:
            self.worker.stdout.close()


def _store_arguments(store: StoreSpec) -> list[str]:
    if store.kind == "sqlite":
        return ["--store", f"sqlite:///{store.target}"]
    return ["--store", store.target, "--schema", store.schema]


def _without_console_settings() -> dict[str, str]:
    # The console's identity and key are its options', whatever the tester's shell exports.
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("STAGEWARE_APPROVAL_", "STAGEWARE_CONSOLE_"))
    }


def _await_http(console: Console) -> None:
    """Poll the console until it answers over HTTP (whatever its status: behind a proxy,
    it refuses a request from anywhere else); fail with its output if it ends first."""
    deadline = time.monotonic() + BOUND
    while True:
        if console.process.poll() is not None:
            raise AssertionError(
                f"the console for {console.user} exited ({console.process.returncode}) "
                f"before it answered:\n{console.output()}"
            )
        try:
            with urllib.request.urlopen(f"{console.direct_url}/approvals", timeout=5):
                return
        except urllib.error.HTTPError:
            return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if time.monotonic() > deadline:
            raise AssertionError(
                f"the console for {console.user} did not answer within {BOUND} s:\n"
                f"{console.output()}"
            )
        time.sleep(0.1)
