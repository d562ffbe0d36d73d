"""Who is using the console: a request turned into a verified ``Approver``, or refused.

The console never asks for a name: an authenticator the deployment plugs in decides who a
request comes from (``ConsoleAuthenticator``), from a view of the request that does not
tie it to the web framework (``ConsoleRequest``). Two are shipped:

- ``LocalAuthenticator``: for development on one's own machine. Every request is the one
  configured user, so it admits only requests from the loopback interface, and the
  command line refuses to serve it on any other address.
- ``ProxyHeaderAuthenticator``: behind a single-sign-on proxy (oauth2-proxy and the like)
  that puts the signed-in user and their groups in request headers. Anyone can send those
  headers, so they are believed only when the request comes from a trusted proxy's
  address; from anywhere else the request is refused. The proxy must remove or overwrite
  both headers of the browser's request: either header sent twice is refused, since which
  copy is the proxy's cannot be told.

A deployment with its own scheme (a session cookie its gateway signs, mutual TLS
terminated in front) writes a ``ConsoleAuthenticator`` of its own.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, TypeAlias, final

from stageware._policy._identity import ApprovalRefused, Approver

__all__ = [
    "ConsoleAuthenticator",
    "ConsoleRequest",
    "LocalAuthenticator",
    "ProxyHeaderAuthenticator",
    "is_loopback",
]

_EMPTY: Final[Mapping[str, str]] = MappingProxyType({})


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ConsoleRequest:
    """What an authenticator sees of a request to the console.

    Attributes:
        method: The HTTP method, upper case (``"GET"``).
        path: The request's path, without the query.
        headers: The request's headers, names in lower case; a header sent more than once
            has its values joined with ``", "``.
        client_host: The address of the peer that opened the connection (the proxy's,
            behind a proxy), or ``None`` when the server does not know it.
        cookies: The request's cookies.
        repeated: The names (lower case) of the headers sent more than once: one a proxy
            added to the browser's instead of replacing it, which joined values hide.
    """

    method: str
    path: str
    headers: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    client_host: str | None = None
    cookies: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    repeated: frozenset[str] = frozenset()


ConsoleAuthenticator: TypeAlias = Callable[[ConsoleRequest], Approver]
"""Turns a request into the ``Approver`` it comes from, or raises ``ApprovalRefused``
(the console then answers 401 and shows nothing)."""


def is_loopback(host: str | None) -> bool:
    """Whether *host* (an address or ``localhost``) is this machine's loopback interface."""
    if host == "localhost":
        return True
    address = _address(host)
    return address is not None and address.is_loopback


def _address(host: str | None) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """*host* as an address (an IPv4 address mapped into IPv6 as the IPv4 one), or ``None``."""
    if host is None:
        return None
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


@final
class LocalAuthenticator:
    """Every request from this machine is *user*: for development only.

    Requests from any address other than the loopback interface are refused, so a console
    served by mistake on a public address still admits no one from elsewhere.

    Args:
        user: Who every request is.
        roles: The roles *user* holds (``Suspend(approvers=["role:finance"])`` matches them).

    Raises:
        ValueError: *user* is not a valid approver id (empty, or starting with ``role:``).
    """

    __slots__ = ("_approver",)

    def __init__(self, user: str, *, roles: Iterable[str] = ()) -> None:
        self._approver = Approver(user, frozenset(roles), "console-local")

    def __call__(self, request: ConsoleRequest) -> Approver:
        """*user*, for a request from the loopback interface.

        Raises:
            ApprovalRefused: The request comes from another address.
        """
        if not is_loopback(request.client_host):
            raise ApprovalRefused(
                f"the console's local mode admits only this machine, and the request comes "
                f"from {request.client_host or 'an unknown address'}"
            )
        return self._approver

    def __repr__(self) -> str:
        return f"LocalAuthenticator({self._approver.id!r})"


@final
class ProxyHeaderAuthenticator:
    """The user a trusted single-sign-on proxy names in a request header.

    Args:
        trusted_proxies: The addresses or networks (``"10.0.0.0/8"``) the proxy connects
            from; headers on a request from anywhere else are not believed, and it is
            refused.
        user_header: The header holding the signed-in user's id.
        roles_header: The header holding their groups, separated by commas; ``None`` for
            no roles.

    Raises:
        ValueError: No trusted proxy, or one that is not an address or a network.
    """

    __slots__ = ("_networks", "_roles_header", "_user_header")

    def __init__(
        self,
        *,
        trusted_proxies: Iterable[str],
        user_header: str = "X-Forwarded-User",
        roles_header: str | None = "X-Forwarded-Groups",
    ) -> None:
        networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for entry in trusted_proxies:
            try:
                networks.append(ipaddress.ip_network(entry.strip(), strict=False))
            except ValueError:
                raise ValueError(
                    f"trusted proxy {entry!r} is not an IP address or network (10.0.0.5, "
                    "10.0.0.0/8, ::1)"
                ) from None
        if not networks:
            raise ValueError(
                "a ProxyHeaderAuthenticator needs the address of at least one trusted proxy: "
                "without one, anyone could name themselves in the header"
            )
        self._networks = tuple(networks)
        self._user_header = user_header.lower()
        self._roles_header = None if roles_header is None else roles_header.lower()

    def __call__(self, request: ConsoleRequest) -> Approver:
        """The user (and roles) the proxy's headers name.

        Raises:
            ApprovalRefused: The request does not come from a trusted proxy, carries no
                user, or carries the user or roles header more than once.
        """
        if not self._trusted(request.client_host):
            raise ApprovalRefused(
                f"the request comes from {request.client_host or 'an unknown address'}, "
                "which is not a trusted proxy; its identity headers are not believed"
            )
        for header in (self._user_header, self._roles_header):
            if header is not None and header in request.repeated:
                # A proxy that adds its header to the browser's instead of replacing it:
                # the browser's groups would be merged with the user's (a role gained).
                raise ApprovalRefused(
                    f"the {header} header was sent more than once; the proxy must replace "
                    "the header a browser sends, not add to it"
                )
        user = request.headers.get(self._user_header, "").strip()
        if not user:
            raise ApprovalRefused(f"the proxy sent no user in the {self._user_header} header")
        if "," in user:
            # Sent more than once (joined): a proxy that adds its header to the browser's
            # instead of replacing it; which one is the proxy's cannot be told.
            raise ApprovalRefused(
                f"the {self._user_header} header names more than one user; the proxy must "
                "replace the header a browser sends, not add to it"
            )
        raw = "" if self._roles_header is None else request.headers.get(self._roles_header, "")
        roles = frozenset(role.strip() for role in raw.split(",") if role.strip())
        try:
            return Approver(user, roles, "proxy-header")
        except ValueError as error:
            raise ApprovalRefused(f"the proxy's user is not a valid id: {error}") from None

    def _trusted(self, host: str | None) -> bool:
        address = _address(host)
        return address is not None and any(address in network for network in self._networks)

    def __repr__(self) -> str:
        shown = ", ".join(str(network) for network in self._networks)
        return f"ProxyHeaderAuthenticator(trusted_proxies=[{shown}])"
