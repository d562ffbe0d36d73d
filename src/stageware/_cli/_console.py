"""``stageware console``: serve the approvals and escalations console for a session store.

The store is named as for ``stageware policy approvals`` (``--store``, ``--schema``), and
``--dbos`` names the DBOS database whose waiting runs an answer wakes. Who a request comes
from is ``--auth``:

- ``local --user NAME [--roles a,b]``: every request from this machine is that user; for
  development, so it is served only on a loopback address, with a warning;
- ``proxy --trusted-proxy ADDRESS ...``: the user a single-sign-on proxy names in
  ``--user-header`` (and ``--roles-header``), believed only from the trusted addresses;
- ``package.module:callable``: the deployment's own ``ConsoleAuthenticator``.

Against DNS rebinding the console answers only requests naming an allowed host: in local
mode this machine's loopback names; otherwise ``--allowed-host`` (repeatable: behind a
proxy, the name people open), by default the ``--host`` it is bound to.

The forms' signing key comes from ``--secret-file`` or ``STAGEWARE_CONSOLE_SECRET``, else a
random one for the process. Exit status 2 with one line on stderr when the console cannot
start. Importing this module loads nothing of the host: the command line builds its parser
from :func:`configure` on every run.
"""

from __future__ import annotations

import argparse
import importlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Final, TextIO, cast

from stageware._extras import needs_extra

from ._errors import CommandError, reported
from ._options import refuse_without
from ._store_url import store_arguments
from ._wake import dbos_arguments

if TYPE_CHECKING:
    from stageware._console._auth import ConsoleAuthenticator

__all__ = ["DESCRIPTION", "HELP", "SECRET_VARIABLE", "configure", "run"]

HELP = "serve the approvals and escalations web console for a session store"
DESCRIPTION = (
    "Serve a web console where approvers see the pending policy approvals and open "
    "escalations of a session store, with what each would run and the conversation leading "
    "to it, approve, deny or resolve them as the identity the authenticator verifies, and "
    "read an audit of past decisions."
)

SECRET_VARIABLE: Final = "STAGEWARE_CONSOLE_SECRET"

_COMMAND: Final = "stageware console"
_MIN_SECRET_BYTES: Final = 32


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the command's arguments on *parser*."""
    store_arguments(parser)
    dbos_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1", help="the address to serve on")
    parser.add_argument("--port", type=int, default=8400, help="the port (default: 8400)")
    parser.add_argument(
        "--auth",
        required=True,
        metavar="MODE",
        help=(
            "who requests come from: local (development: every request is --user), proxy "
            "(the user a trusted SSO proxy names in a header), or package.module:callable "
            "(the deployment's own ConsoleAuthenticator)"
        ),
    )
    parser.add_argument("--user", metavar="NAME", help="the user of --auth local")
    parser.add_argument("--roles", metavar="A,B", help="that user's roles (--auth local)")
    parser.add_argument(
        "--user-header",
        metavar="NAME",
        help="the header holding the user (--auth proxy; default X-Forwarded-User)",
    )
    parser.add_argument(
        "--roles-header",
        metavar="NAME",
        help="the header holding their groups (--auth proxy; default X-Forwarded-Groups)",
    )
    parser.add_argument(
        "--trusted-proxy",
        action="append",
        metavar="ADDRESS",
        help="an address or network the proxy connects from (--auth proxy; repeatable)",
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        metavar="NAME",
        help="a host name the console is served under, any port (not with --auth local, "
        "which allows only localhost, 127.0.0.1 and ::1; repeatable; default: --host)",
    )
    parser.add_argument(
        "--secure-cookies",
        action="store_true",
        help="mark the forms' cookie Secure (behind a proxy that terminates TLS)",
    )
    parser.add_argument(
        "--resolvers",
        metavar="IDS",
        help="who may claim and resolve escalations: ids and role:<name>, comma-separated "
        "(default: anyone the authenticator admits)",
    )
    parser.add_argument(
        "--secret-file",
        metavar="PATH",
        help=f"the key the forms are signed with (default: ${SECRET_VARIABLE}, else random)",
    )


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Serve until interrupted; return the exit status."""
    return reported(_COMMAND, err, lambda: _run(args, err))


def _run(args: argparse.Namespace, err: TextIO) -> None:
    from ._store_url import opened_store

    authenticator = _authenticator(args)
    hosts = _allowed_hosts(args)
    secret = _secret(args.secret_file)
    resolvers = _list(args.resolvers)
    try:
        import uvicorn

        from stageware.console import create_app
    except ImportError:
        raise CommandError("the console needs " + needs_extra("console")) from None
    with opened_store(args.store, schema=args.schema) as store:
        if args.auth == "local":
            # Said once the store opened: a console that never starts has nobody to warn.
            err.write(
                f"{_COMMAND}: warning: --auth local: every request from this machine acts as "
                f"{args.user!r}; for development only\n"
            )
        app = create_app(
            store,
            authenticator=authenticator,
            secret=secret,
            dbos_url=args.dbos,
            dbos_schema=args.dbos_schema,
            resolvers=resolvers,
            allowed_hosts=hosts,
            secure_cookies=args.secure_cookies,
        )
        err.write(f"{_COMMAND}: serving on http://{_shown_host(args.host)}:{args.port}/\n")
        err.flush()
        # proxy_headers off: the client address the authenticators check is the peer that
        # connected, never one an X-Forwarded-For header claims (uvicorn would otherwise
        # believe that header from 127.0.0.1, letting a local user pose as the proxy).
        uvicorn.run(
            app,
            host=args.host,
            port=args.port,
            proxy_headers=False,
            log_level="warning",
            access_log=False,
        )


def _allowed_hosts(args: argparse.Namespace) -> list[str] | None:
    if args.auth == "local":
        return None  # the console allows only this machine's loopback names
    if args.allowed_host:
        from stageware._console._hosts import parse_allowed_hosts

        try:
            parse_allowed_hosts(args.allowed_host)
        except ValueError as error:
            raise CommandError(f"--allowed-host: {error}") from None
        return list(args.allowed_host)
    if args.host.strip("[]") in ("0.0.0.0", "::", ""):
        raise CommandError(
            f"--host {args.host} listens on every address, so name the host people open "
            "the console under: --allowed-host console.example.com"
        )
    return [args.host]


def _authenticator(args: argparse.Namespace) -> ConsoleAuthenticator:
    from stageware._console._auth import (
        LocalAuthenticator,
        ProxyHeaderAuthenticator,
        is_loopback,
    )

    mode: str = args.auth
    if mode != "local":
        refuse_without(args, "--auth local", user="--user", roles="--roles")
    else:
        refuse_without(
            args, "--auth proxy or a custom authenticator", allowed_host="--allowed-host"
        )
    if mode != "proxy":
        refuse_without(
            args,
            "--auth proxy",
            user_header="--user-header",
            roles_header="--roles-header",
            trusted_proxy="--trusted-proxy",
        )
    if mode == "local":
        if args.user is None:
            raise CommandError("--auth local needs --user NAME: who every request is")
        if not is_loopback(args.host):
            raise CommandError(
                f"--auth local makes every request {args.user!r}, so it serves only on a "
                f"loopback address (127.0.0.1, ::1), not --host {args.host}; behind a "
                "single-sign-on proxy use --auth proxy"
            )
        try:
            return LocalAuthenticator(args.user, roles=_list(args.roles) or ())
        except ValueError as error:
            raise CommandError(f"--user: {error}") from None
    if mode == "proxy":
        if not args.trusted_proxy:
            raise CommandError(
                "--auth proxy needs --trusted-proxy ADDRESS (the proxy's address or network): "
                "the identity headers of a request from anywhere else are not believed"
            )
        try:
            return ProxyHeaderAuthenticator(
                trusted_proxies=args.trusted_proxy,
                user_header=args.user_header or "X-Forwarded-User",
                roles_header=args.roles_header or "X-Forwarded-Groups",
            )
        except ValueError as error:
            raise CommandError(f"--trusted-proxy: {error}") from None
    return _custom(mode)


def _custom(spec: str) -> ConsoleAuthenticator:
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise CommandError(f"--auth {spec!r} is neither local, proxy nor package.module:callable")
    try:
        module = importlib.import_module(module_name)
    except Exception as error:
        raise CommandError(
            f"--auth {spec}: cannot import {module_name}: {type(error).__name__}: {error}"
        ) from None
    found: object = getattr(module, attribute, None)
    if found is None:
        raise CommandError(f"--auth {spec}: module {module_name} has no {attribute}")
    if not callable(found):
        raise CommandError(
            f"--auth {spec}: {attribute} is a {type(found).__name__}, not a callable "
            "ConsoleAuthenticator"
        )
    return cast("ConsoleAuthenticator", found)


def _secret(path: str | None) -> bytes | None:
    if path is not None:
        try:
            secret = Path(path).read_bytes().strip()
        except OSError as error:
            raise CommandError(f"--secret-file {path}: {error.strerror}") from None
        where = f"--secret-file {path}"
    else:
        given = os.environ.get(SECRET_VARIABLE)
        if not given:
            return None
        secret, where = given.encode(), SECRET_VARIABLE
    if len(secret) < _MIN_SECRET_BYTES:
        # The length only: the bytes are (part of) a key.
        raise CommandError(
            f"{where}: the key is {len(secret)} bytes; it must be at least {_MIN_SECRET_BYTES}"
        )
    return secret


def _list(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [item.strip() for item in text.split(",") if item.strip()]


def _shown_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
