"""The session-store fixtures of ``tests/host/sessions``, for the durable-approval tests;
and the journal mode (``tests/journal_mode``)."""

from tests.host.sessions.conftest import postgres_server, postgres_spec, shared_spec
from tests.journal_mode import journaled, pytest_configure

__all__ = ["journaled", "postgres_server", "postgres_spec", "pytest_configure", "shared_spec"]
