"""The LiteLLM proxy, a real third-party server, run on loopback for the adapters' tests.

``LiteLLMProxy.start(config, directory)`` runs ``litellm --config`` as a subprocess on a
free loopback port and waits until it answers; ``stop()`` ends it. The proxy speaks the
OpenAI chat-completions API (``/v1/chat/completions``) and Anthropic's Messages API
(``/v1/messages``) for every model in its config, so any adapter's test can use it: give
it ``base_url`` (for an OpenAI client, ``base_url + "/v1"``) and ``api_key``.

It runs offline: its models answer with LiteLLM's ``mock_response`` (a text, or one of
the strings that make it raise ``litellm.RateLimitError`` and the like), and the
``LITELLM_LOCAL_*`` switches make it read the model cost map and its other tables from
the package instead of fetching them at start-up. It needs the ``litellm-proxy`` extra
(``pip install -e '.[litellm-proxy]'``): without it the tests skip, and fail when ``CI``
is set, as the Postgres tests do.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

__all__ = [
    "HOW_TO_RUN_LITELLM",
    "MOCK_MODELS",
    "LiteLLMProxy",
    "litellm_executable",
    "mock_model",
    "upstream_model",
]

HOW_TO_RUN_LITELLM: Final = (
    "the LiteLLM proxy tests need the litellm-proxy extra: pip install -e '.[litellm-proxy]'"
)
# The master key the proxy is started with: the API key its clients send.
MASTER_KEY: Final = "sk-stageware-test"
# The first start imports the whole proxy (a minute on a busy two-core machine).
_START_TIMEOUT: Final = 180.0
# Tables the proxy would fetch from the internet at start-up, read from the package instead.
_OFFLINE: Final = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS": "True",
    "LITELLM_LOCAL_POLICY_TEMPLATES": "True",
    "LITELLM_LOCAL_BLOG_POSTS": "True",
    "LITELLM_LOCAL_AUTOROUTER_PRESETS": "True",
}


def mock_model(name: str, mock_response: str) -> dict[str, Any]:
    """A model of the proxy's config that answers every request with *mock_response*.

    ``"litellm.RateLimitError"``, ``"litellm.ContextWindowExceededError"`` and
    ``"litellm.InternalServerError"`` make it answer with that error instead (429, 400,
    500). No request leaves the machine: the provider is never called.
    """
    return {
        "model_name": name,
        "litellm_params": {
            "model": f"openai/{name}",
            "api_key": "unused",
            "mock_response": mock_response,
        },
    }


# The models every test shares (one proxy serves the whole session).
MOCK_MODELS: Final = [
    mock_model("mock-text", "Your order has shipped."),
    mock_model("mock-throttled", "litellm.RateLimitError"),
    mock_model("mock-overflow", "litellm.ContextWindowExceededError"),
    mock_model("mock-broken", "litellm.InternalServerError"),
    # Streams part of an answer, then LiteLLM's mid-stream error.
    mock_model("mock-cut-short", "Exception: mock_streaming_error"),
]


def upstream_model(name: str, api_base: str) -> dict[str, Any]:
    """A model of the proxy's config served by an OpenAI-compatible server at *api_base*.

    The proxy forwards each request there and streams the answer back re-encoded, as it
    does for a real provider: with the fake server of ``fake_openai_server``, a test
    scripts what the provider says (tool calls included) and sees what the proxy sent it.
    Requests to the proxy's Anthropic-compatible ``/v1/messages`` are forwarded as chat
    completions too (``use_chat_completions_api``; LiteLLM would otherwise call the
    Responses API, which the fake server does not serve), and their answers streamed back
    as Anthropic's SSE events. The mocked models of ``mock_model`` answer ``/v1/messages``
    with a single JSON body even when asked to stream.
    """
    return {
        "model_name": name,
        "litellm_params": {
            "model": f"openai/{name}",
            "api_base": api_base,
            "api_key": "k",
            "use_chat_completions_api": True,
        },
    }


def litellm_executable() -> Path | None:
    """The proxy's command of this environment, or ``None`` without the extra."""
    found = shutil.which("litellm", path=str(Path(sys.executable).parent))
    return None if found is None else Path(found)


@dataclass
class LiteLLMProxy:
    """A running proxy: its URL, the key its clients send, and its process."""

    base_url: str
    """``http://127.0.0.1:<port>``, without ``/v1``."""
    api_key: str
    process: subprocess.Popen[bytes]
    log: Path

    @classmethod
    def start(cls, executable: Path, models: list[dict[str, Any]], directory: Path) -> LiteLLMProxy:
        """Start a proxy serving *models*, with its config and log in *directory*."""
        config = directory / "litellm.yaml"
        # JSON is YAML: no YAML writer needed.
        document = {
            "model_list": models,
            "general_settings": {"master_key": MASTER_KEY},
            # Every error reaches the client as the model sent it, not retried.
            "litellm_settings": {"num_retries": 0, "request_timeout": 30},
        }
        config.write_text(json.dumps(document, indent=2), encoding="utf-8")
        port = _free_port()
        log = directory / "litellm.log"
        # Only what the proxy needs from this environment: no provider keys, no proxies.
        env = {
            key: value
            for key, value in os.environ.items()
            if key in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
        }
        env.update(_OFFLINE)
        command = [str(executable), "--config", str(config), "--host", "127.0.0.1"]
        with log.open("wb") as output:
            process = subprocess.Popen(
                [*command, "--port", str(port)],
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=directory,
                env=env,
            )
        proxy = cls(f"http://127.0.0.1:{port}", MASTER_KEY, process, log)
        try:
            proxy._wait_until_ready()
        except BaseException:
            proxy.stop()
            raise
        return proxy

    def stop(self) -> None:
        """End the proxy (SIGTERM, then SIGKILL after 10 s)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + _START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"the LiteLLM proxy exited with {self.process.returncode} before it "
                    f"answered:\n{self._log_tail()}"
                )
            try:
                with urllib.request.urlopen(f"{self.base_url}/health/liveliness", timeout=2):
                    return
            except (urllib.error.URLError, OSError):
                time.sleep(0.2)
        raise RuntimeError(
            f"the LiteLLM proxy did not answer within {_START_TIMEOUT:.0f} s:\n{self._log_tail()}"
        )

    def _log_tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-30:])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
