"""Fixtures shared by the adapters' tests: the LiteLLM proxy, started once per session.

Besides ``MOCK_MODELS`` it serves ``via-upstream``, forwarded to ``litellm_upstream``, a
fake OpenAI-compatible server whose replies a test scripts (tool calls, say).

Without the ``litellm-proxy`` extra the tests that use it skip, saying how to install it;
when ``CI`` is set they fail instead, so CI never passes without having run them.

And the journal mode (``tests/journal_mode``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.journal_mode import journaled, pytest_configure

from .fake_openai_server import FakeOpenAIServer
from .litellm_proxy import (
    HOW_TO_RUN_LITELLM,
    MOCK_MODELS,
    LiteLLMProxy,
    litellm_executable,
    upstream_model,
)

__all__ = ["journaled", "litellm_proxy", "litellm_upstream", "pytest_configure"]


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


@pytest.fixture(scope="session")
def litellm_upstream() -> Iterator[FakeOpenAIServer]:
    """The provider behind the proxy's ``via-upstream`` model; tests queue its replies."""
    server = FakeOpenAIServer()
    server.start()
    yield server
    server.close()


@pytest.fixture(scope="session")
def litellm_proxy(
    tmp_path_factory: pytest.TempPathFactory, litellm_upstream: FakeOpenAIServer
) -> Iterator[LiteLLMProxy]:
    """A LiteLLM proxy on loopback, for every test of the session."""
    executable = litellm_executable()
    if executable is None:
        if _in_ci():
            pytest.fail(f"CI is set, so this does not skip: {HOW_TO_RUN_LITELLM}", pytrace=False)
        pytest.skip(HOW_TO_RUN_LITELLM)
    models = [*MOCK_MODELS, upstream_model("via-upstream", litellm_upstream.base_url)]
    proxy = LiteLLMProxy.start(executable, models, tmp_path_factory.mktemp("litellm"))
    yield proxy
    proxy.stop()
