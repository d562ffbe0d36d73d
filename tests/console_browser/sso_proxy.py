"""A single-sign-on proxy of the tests' own, in front of a console run with ``--auth proxy``.

As oauth2-proxy and its kind do once a user has signed in, it passes every request on to
the console with the user in ``X-Forwarded-User`` and their groups in
``X-Forwarded-Groups``, replacing any the browser sent, and keeps the ``Host`` header (the
console checks a form's ``Origin`` against it). It connects to the console from a
loopback address of its own (``SOURCE``), which is what the console is told to trust: a
browser that goes around the proxy connects from another.
"""

from __future__ import annotations

import http.client
import http.server
import threading
from typing import Final

SOURCE: Final = "127.0.0.3"
"""The address the proxy connects to the console from (Linux routes all of 127/8 to lo)."""

# Hop-by-hop headers, which are the connection's, not the message's; the length is set anew.
_NOT_PASSED: Final = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "content-length",
    }
)
_IDENTITY: Final = ("x-forwarded-user", "x-forwarded-groups")


class SsoProxy:
    """The proxy, serving on a free loopback port in a thread of its own until closed.

    Args:
        console_port: The console's port on 127.0.0.1.
        user: Who every request is signed in as.
        groups: Their groups.
    """

    def __init__(self, console_port: int, user: str, groups: tuple[str, ...]) -> None:
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {
                    name: value
                    for name, value in self.headers.items()
                    if name.lower() not in _NOT_PASSED and name.lower() not in _IDENTITY
                }
                headers["X-Forwarded-User"] = proxy.user
                headers["X-Forwarded-Groups"] = ",".join(proxy.groups)
                upstream = http.client.HTTPConnection(
                    "127.0.0.1", console_port, timeout=30, source_address=(SOURCE, 0)
                )
                try:
                    upstream.request(self.command, self.path, body, headers)
                    answer = upstream.getresponse()
                    content = answer.read()
                finally:
                    upstream.close()
                self.send_response(answer.status, answer.reason)
                for name, value in answer.getheaders():
                    if name.lower() not in _NOT_PASSED:
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            do_GET = do_POST = _forward

            def log_message(self, format: str, *args: object) -> None:
                pass  # quiet: the console logs what it serves

        self.user = user
        self.groups = groups
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
