"""Fixtures shared by the adapters' tests: the LiteLLM proxy, started once per session.

Without the ``litellm-proxy`` extra the tests that use it skip, saying how to install it;
when ``CI`` is set they fail instead, so CI never passes without having run them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from .litellm_proxy import HOW_TO_RUN_LITELLM, MOCK_MODELS, LiteLLMProxy, litellm_executable


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


@pytest.fixture(scope="session")
def litellm_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiteLLMProxy]:
    """A LiteLLM proxy on loopback serving ``MOCK_MODELS``, for every test of the session."""
    executable = litellm_executable()
    if executable is None:
        if _in_ci():
            pytest.fail(f"CI is set, so this does not skip: {HOW_TO_RUN_LITELLM}", pytrace=False)
        pytest.skip(HOW_TO_RUN_LITELLM)
    proxy = LiteLLMProxy.start(executable, MOCK_MODELS, tmp_path_factory.mktemp("litellm"))
    yield proxy
    proxy.stop()
