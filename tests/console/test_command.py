"""``stageware console``: what it refuses to start with, and a real server in a real process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import httpx2 as httpx
import pytest

from stageware import SQLiteSessionStore
from stageware_codegen.cli import main

from .desk import Desk, form_fields

ROOT = Path(__file__).resolve().parents[2]


def run(arguments: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    status = main(["console", *arguments])
    return status, capsys.readouterr().err


@pytest.fixture
def store_file(tmp_path: Path) -> Path:
    path = tmp_path / "sessions.db"
    SQLiteSessionStore(path).session_ids()  # the store's tables
    return path


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        pytest.param(
            ["--auth", "local", "--user", "ana", "--host", "0.0.0.0"],
            "--auth local makes every request 'ana', so it serves only on a loopback address",
            id="local on every address",
        ),
        pytest.param(["--auth", "local"], "--auth local needs --user NAME", id="local, no user"),
        pytest.param(
            ["--auth", "local", "--user", "role:x"], "--user: an Approver id may not", id="role id"
        ),
        pytest.param(["--auth", "proxy"], "--auth proxy needs --trusted-proxy", id="no proxy"),
        pytest.param(
            ["--auth", "proxy", "--trusted-proxy", "gateway"],
            "--trusted-proxy: trusted proxy 'gateway' is not an IP address",
            id="proxy by name",
        ),
        pytest.param(
            ["--auth", "proxy", "--trusted-proxy", "10.0.0.1", "--user", "ana"],
            "--user goes with --auth local",
            id="user with proxy",
        ),
        pytest.param(
            ["--auth", "local", "--user", "a", "--trusted-proxy", "10.0.0.1"],
            "--trusted-proxy goes with --auth proxy",
            id="proxy option with local",
        ),
        pytest.param(
            ["--auth", "local", "--user", "a", "--allowed-host", "console.example.com"],
            "--allowed-host goes with --auth proxy or a custom authenticator",
            id="allowed host with local",
        ),
        pytest.param(
            ["--auth", "proxy", "--trusted-proxy", "10.0.0.1", "--host", "0.0.0.0"],
            "--host 0.0.0.0 listens on every address, so name the host people open",
            id="proxy on every address without an allowed host",
        ),
        pytest.param(
            ["--auth", "proxy", "--trusted-proxy", "10.0.0.1", "--allowed-host", "a.example:80"],
            "--allowed-host: allowed host 'a.example:80' is not a host name",
            id="allowed host with a port",
        ),
        pytest.param(
            ["--auth", "ldap"], "neither local, proxy nor package.module:callable", id="mode"
        ),
        pytest.param(
            ["--auth", "no_such_module_here:check"],
            "--auth no_such_module_here:check: cannot import no_such_module_here: "
            "ModuleNotFoundError",
            id="module",
        ),
        pytest.param(
            ["--auth", "tests.console.desk:nothing"],
            "module tests.console.desk has no nothing",
            id="attribute",
        ),
        pytest.param(
            ["--auth", "tests.console.desk:SECRET"],
            "SECRET is a bytes, not a callable ConsoleAuthenticator",
            id="not callable",
        ),
    ],
)
def test_a_console_that_cannot_start_says_why_in_one_line(
    store_file: Path,
    capsys: pytest.CaptureFixture[str],
    arguments: list[str],
    expected: str,
) -> None:
    status, err = run(["--store", str(store_file), *arguments], capsys)

    assert status == 2
    [line] = err.splitlines()
    assert line.startswith("stageware console: ")
    assert expected in line


def test_a_store_not_made_yet_is_one_line_that_says_how_to_make_it_and_no_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "sessions.db"

    status, err = run(
        ["--store", f"sqlite:///{missing}", "--auth", "local", "--user", "dana"], capsys
    )

    assert status == 2
    # Only the error: the local mode's warning is for a console that serves.
    assert err == (
        f"stageware console: --store {missing}: no such file; an agent makes one when it runs "
        "with SQLiteSessionStore(path) (sqlite:////abs/path.db names an absolute path)\n"
    )
    assert not missing.exists()


def test_a_short_secret_is_refused_without_showing_it(
    store_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STAGEWARE_CONSOLE_SECRET", "hunter2")
    status, err = run(["--store", str(store_file), "--auth", "local", "--user", "a"], capsys)
    assert status == 2
    assert "STAGEWARE_CONSOLE_SECRET: the key is 7 bytes; it must be at least 32" in err
    assert "hunter2" not in err


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_the_command_serves_the_console_and_an_answer_over_http_is_recorded(
    store_file: Path, tmp_path: Path
) -> None:
    store = SQLiteSessionStore(store_file)
    desk = Desk()
    interrupt_id = desk.suspend(store, "s1")
    secret = tmp_path / "secret"
    secret.write_bytes(os.urandom(48).hex().encode())
    port = _free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "stageware_codegen.cli",
            "console",
            "--store",
            f"sqlite:///{store_file}",
            "--auth",
            "local",
            "--user",
            "fiona",
            "--roles",
            "finance,staff",
            "--port",
            str(port),
            "--secret-file",
            str(secret),
        ],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        base = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=base, timeout=10) as client:
            deadline = time.monotonic() + 30
            while True:
                try:
                    listing = client.get("/approvals")
                    break
                except httpx.TransportError:
                    assert server.poll() is None, "the console exited"
                    assert time.monotonic() < deadline, "the console did not start"
                    time.sleep(0.1)
            assert listing.status_code == 200
            assert f'data-interrupt-id="{interrupt_id}"' in listing.text
            # The client the authenticator sees is the peer, not what a header claims (a
            # server believing X-Forwarded-For would make this request come from afar).
            claimed = client.get("/approvals", headers={"X-Forwarded-For": "203.0.113.9"})
            assert claimed.status_code == 200
            # A page whose name was re-bound to 127.0.0.1 (DNS rebinding) is not served.
            rebound = client.get("/approvals", headers={"Host": f"rebind.example:{port}"})
            assert rebound.status_code == 400
            assert interrupt_id not in rebound.text
            page = f"/approvals/s1/{quote(interrupt_id, safe='')}"
            fields = form_fields(client.get(page).text, "answer")
            assert fields is not None

            answered = client.post("/approvals/answer", data={**fields, "decision": "approve"})

            assert answered.status_code == 303
            assert answered.headers["location"] == f"{page}?outcome=approved"
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=30)
    assert "warning: --auth local: every request from this machine acts as 'fiona'" in err
    assert f"serving on http://127.0.0.1:{port}/" in err
    stored = SQLiteSessionStore(store_file)
    entry = stored.approval("s1", interrupt_id)
    assert entry is not None
    assert (entry.status, entry.answered_by, entry.roles, entry.via) == (
        "approved",
        "fiona",
        ("finance", "staff"),
        "console-local",
    )
    result = desk.agent(stored, ["Refunded."], "s1")()
    assert result.text == "Refunded."
    assert desk.paid == [900]
