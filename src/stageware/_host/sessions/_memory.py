"""``MemorySessionStore``: sessions kept in this process, for tests and short-lived agents."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final, final

from ._encoding import decode_snapshot, encode_snapshot
from ._store import (
    Lease,
    SessionSnapshot,
    StoredSession,
    check_renewal,
    check_session_id,
    check_write,
)

__all__ = ["MemorySessionStore"]

_WHERE: Final = "the memory store"


@final
@dataclass(frozen=True, slots=True)
class _Record:
    document: str
    version: int
    lease: Lease | None


@final
class MemorySessionStore:
    """A ``SessionStore`` that keeps sessions in this process.

    It holds the encoded JSON rather than the caller's objects, so a snapshot is copied on
    the way in and out (later changes by the caller never reach the store, nor the other
    way round) and the same values are refused as by the database stores. Versions and
    leases follow the same rule too: swapping one store for another does not change what
    an agent may save, or when.
    """

    __slots__ = ("_lock", "_records")

    def __init__(self) -> None:
        self._records: dict[str, _Record] = {}
        # Each save reads, checks and writes; the lock makes that one step.
        self._lock = threading.Lock()

    def load(self, session_id: str) -> StoredSession | None:
        """Return a fresh copy of the session saved as *session_id*, or ``None``."""
        check_session_id(session_id, _WHERE)
        with self._lock:
            record = self._records.get(session_id)
        if record is None:
            return None
        snapshot = decode_snapshot(record.document, session_id, _WHERE)
        return StoredSession(snapshot=snapshot, version=record.version, lease=record.lease)

    def save(
        self,
        session_id: str,
        snapshot: SessionSnapshot,
        *,
        expected_version: int,
        owner: str,
        lease_seconds: float | None,
    ) -> int:
        """Store a copy of *snapshot* if the session is still at *expected_version*."""
        check_session_id(session_id, _WHERE)
        document = encode_snapshot(snapshot, session_id, _WHERE)
        with self._lock:
            now = datetime.now(UTC)
            self._check(session_id, expected_version, owner, now)
            lease = _lease(owner, lease_seconds, now)
            self._records[session_id] = _Record(document, expected_version + 1, lease)
        return expected_version + 1

    def renew(self, session_id: str, *, version: int, owner: str, lease_seconds: float) -> None:
        """Extend *owner*'s lease on *session_id*."""
        check_session_id(session_id, _WHERE)
        check_renewal(version)
        with self._lock:
            now = datetime.now(UTC)
            record = self._check(session_id, version, owner, now)
            assert record is not None  # check_write refuses a missing session at version > 0
            self._records[session_id] = _Record(
                record.document, version, _lease(owner, lease_seconds, now)
            )

    def delete(self, session_id: str) -> None:
        """Forget *session_id*, if it was saved."""
        check_session_id(session_id, _WHERE)
        with self._lock:
            self._records.pop(session_id, None)

    def _check(self, session_id: str, version: int, owner: str, now: datetime) -> _Record | None:
        record = self._records.get(session_id)
        check_write(
            session_id,
            _WHERE,
            expected_version=version,
            owner=owner,
            found_version=0 if record is None else record.version,
            found_lease=None if record is None else record.lease,
            now=now,
        )
        return record

    def __repr__(self) -> str:
        with self._lock:
            count = len(self._records)
        return f"MemorySessionStore(<{count} sessions>)"


def _lease(owner: str, lease_seconds: float | None, now: datetime) -> Lease | None:
    if lease_seconds is None:
        return None
    return Lease(owner=owner, expires_at=now + timedelta(seconds=lease_seconds))
