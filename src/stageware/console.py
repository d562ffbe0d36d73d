"""The approvals and escalations console: a web app where humans answer what runs wait on.

Approvers are rarely at a terminal. ``create_app`` serves, for any session store, the
pending policy approvals (what will run if approved, the conversation leading to it, the
policy's reason, who may answer), the open escalations, and an audit of past decisions
with the verified identity of each; approvers approve, deny and resolve with plain HTML
forms. It needs the ``console`` extra:

```bash
pip install -e '.[console]'    # in a clone; the README's Install gives a git URL form
stageware console --store sqlite:///sessions.db --auth local --user dana
```

Who a request comes from is decided by a ``ConsoleAuthenticator`` the deployment plugs in:
``LocalAuthenticator`` for development, ``ProxyHeaderAuthenticator`` behind a single-sign-on
proxy, or one of its own. Anyone it admits may read; only those a ``Suspend`` allowed
may answer its approval, through the same checks as every other way of answering (the
answer is final, bound to its step's fingerprint, refused while a worker runs the
session).
"""

from __future__ import annotations

from stageware import _extras

try:
    from stageware._console._app import create_app
except ModuleNotFoundError as _missing:
    # Only a missing extra gets the install hint; any other missing module is a real bug.
    if _missing.name is None or _missing.name.partition(".")[0] not in ("starlette", "jinja2"):
        raise
    raise ImportError(
        "stageware.console needs Starlette, Jinja2 and python-multipart, from "
        + _extras.needs_extra("console")
    ) from _missing
from stageware._console._auth import (
    ConsoleAuthenticator,
    ConsoleRequest,
    LocalAuthenticator,
    ProxyHeaderAuthenticator,
)

__all__ = [
    "ConsoleAuthenticator",
    "ConsoleRequest",
    "LocalAuthenticator",
    "ProxyHeaderAuthenticator",
    "create_app",
]
