"""The session-store fixtures of ``tests/host/sessions``, for the DBOS tests."""

from tests.host.sessions.conftest import postgres_server, postgres_spec, shared_spec

__all__ = ["postgres_server", "postgres_spec", "shared_spec"]
