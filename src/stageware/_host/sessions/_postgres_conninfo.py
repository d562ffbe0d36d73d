"""Where a Postgres store's database is, said without its password.

A conninfo string or URL may carry a password, and the store names its database in
``repr()`` and in every error. These helpers build that name from the parsed parameters,
never from the text the caller gave, and scrub the password from any text a driver error
could echo.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, final
from urllib.parse import quote

from psycopg import ProgrammingError
from psycopg.conninfo import conninfo_to_dict

__all__ = ["Location", "locate"]

_HIDDEN: Final = "***"

# The parameters that say where a database is, and the password, which is hidden.
_PARTS: Final = frozenset({"host", "port", "dbname", "user", "password"})


@final
@dataclass(frozen=True, slots=True)
class Location:
    """A database's address for messages, and the secrets messages must not show.

    Attributes:
        description: ``postgresql://user:***@host:port/dbname``, with only the parameters
            that say where the database is.
        secrets: The texts ``scrub`` hides (the password).
    """

    description: str
    secrets: tuple[str, ...] = ()

    def scrub(self, text: str) -> str:
        """Return *text* with every secret of this location replaced by ``***``."""
        for secret in self.secrets:
            text = text.replace(secret, _HIDDEN)
        return text


def locate(conninfo: str, overrides: Mapping[str, object] | None = None) -> Location:
    """Describe the database *conninfo* (and a pool's connection *overrides*) point at.

    Raises:
        ValueError: *conninfo* is neither a conninfo string nor a URL. The message does not
            quote it, nor the parser's complaint, which may quote part of it.
    """
    try:
        params: dict[str, object] = dict(conninfo_to_dict(conninfo))
    except ProgrammingError:
        raise ValueError(
            "PostgresSessionStore needs a PostgreSQL connection string "
            "('host=... dbname=...') or URL ('postgresql://...'); the one given cannot be "
            "parsed (not shown: it may hold a password)"
        ) from None
    for key, value in (overrides or {}).items():
        if key in _PARTS and isinstance(value, str | int):
            params[key] = str(value)
    password = params.get("password")
    secrets = (password,) if isinstance(password, str) and password else ()

    def get(key: str) -> str:
        value = params.get(key)
        return value if isinstance(value, str) else ""

    user = quote(get("user"), safe="")
    credentials = f"{user}:{_HIDDEN}@" if secrets else (f"{user}@" if user else "")
    host, port, dbname = get("host"), get("port"), get("dbname")
    # A socket directory is not a host name: it goes in the query, as libpq reads URLs.
    netloc = "" if host.startswith("/") else host
    if port and not host.startswith("/"):
        netloc += f":{port}"
    query = f"?host={host}" if host.startswith("/") else ""
    description = f"postgresql://{credentials}{netloc}/{quote(dbname, safe='')}{query}"
    # Scrubbed too: the password may stand in another parameter as well, if only by chance.
    return Location(Location("", secrets).scrub(description), secrets)
