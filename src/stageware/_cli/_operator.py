"""Who runs a policy command that answers or resolves: the operator, verified.

By default the operating-system account the command runs under (its effective user id,
not ``$USER``, which anyone can set), with the account's groups as roles, ``via``
``"os-user"``. A deployment that wants its own identities names an authenticator factory
in ``STAGEWARE_APPROVAL_AUTHENTICATOR`` (``package.module:factory``, called with no
arguments, returning a ``(credential) -> Approver`` callable); the credential is read from
``--credential-file`` or ``STAGEWARE_APPROVAL_CREDENTIAL``, and that authenticator decides.
A ``--by NAME`` flag, which anyone could set, is refused.
"""

from __future__ import annotations

import argparse
import importlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Final, cast

from ._errors import CommandError

if TYPE_CHECKING:
    from stageware._policy._identity import Approver, Authenticator

__all__ = [
    "AUTHENTICATOR_VARIABLE",
    "CREDENTIAL_VARIABLE",
    "identity_arguments",
    "operator",
    "refuse_by",
]

AUTHENTICATOR_VARIABLE: Final = "STAGEWARE_APPROVAL_AUTHENTICATOR"
CREDENTIAL_VARIABLE: Final = "STAGEWARE_APPROVAL_CREDENTIAL"


def identity_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``--credential-file``, and ``--by`` (hidden) to refuse it with a reason."""
    parser.add_argument(
        "--credential-file",
        metavar="PATH",
        help=f"the operator's credential, for the authenticator {AUTHENTICATOR_VARIABLE} names",
    )
    parser.add_argument("--by", help=argparse.SUPPRESS)


def refuse_by(args: argparse.Namespace) -> None:
    """Refuse ``--by``, saying where the identity comes from instead.

    Raises:
        CommandError: ``--by`` was given.
    """
    if args.by is not None:
        raise CommandError(
            "--by is no longer accepted: anyone can type a name. The command acts as the "
            "operating-system account that runs it, or as the credential the authenticator "
            f"named in {AUTHENTICATOR_VARIABLE} verifies"
        )


def operator(args: argparse.Namespace) -> Approver:
    """The verified identity of whoever runs the command.

    Raises:
        CommandError: ``--by`` was given, the configured authenticator cannot be loaded or
            refuses the credential, or the account cannot be read.
    """
    refuse_by(args)
    factory = os.environ.get(AUTHENTICATOR_VARIABLE)
    if factory is None:
        if args.credential_file is not None:
            raise CommandError(
                f"--credential-file needs {AUTHENTICATOR_VARIABLE} to name the authenticator "
                "that verifies it"
            )
        return _os_user()
    authenticator = _load(factory)
    from stageware._policy._identity import ApprovalRefused, Approver

    try:
        approver = cast(object, authenticator(_credential(args.credential_file)))
    except ApprovalRefused as error:
        raise CommandError(f"the authenticator {factory} refused the credential: {error}") from None
    if not isinstance(approver, Approver):
        raise CommandError(
            f"the authenticator {factory} returned {type(approver).__name__}, not an Approver"
        )
    return approver


def _os_user() -> Approver:
    from stageware._policy._identity import Approver

    try:
        import grp
        import pwd
    except ImportError:
        raise CommandError(
            f"this system has no account database to identify the operator; set "
            f"{AUTHENTICATOR_VARIABLE}"
        ) from None
    try:
        account = pwd.getpwuid(os.geteuid())
    except KeyError:
        raise CommandError(
            f"user id {os.geteuid()} has no account entry, so the operator cannot be "
            f"identified; set {AUTHENTICATOR_VARIABLE}"
        ) from None
    roles: set[str] = set()
    for gid in os.getgrouplist(account.pw_name, account.pw_gid):
        try:
            roles.add(grp.getgrgid(gid).gr_name)
        except KeyError:  # a group without a name is no role anyone can grant
            continue
    return Approver(account.pw_name, frozenset(roles), "os-user")


def _load(factory: str) -> Authenticator:
    module_name, colon, attribute = factory.partition(":")
    if not colon or not module_name or not attribute:
        raise CommandError(f"{AUTHENTICATOR_VARIABLE}={factory!r} must be package.module:factory")
    try:
        built = getattr(importlib.import_module(module_name), attribute)()
    except Exception as error:
        raise CommandError(
            f"{AUTHENTICATOR_VARIABLE}={factory!r} could not build an authenticator: "
            f"{type(error).__name__}: {error}"
        ) from None
    if not callable(built):
        raise CommandError(
            f"{AUTHENTICATOR_VARIABLE}={factory!r} returned {type(built).__name__}, not a "
            "(credential) -> Approver callable"
        )
    return cast("Authenticator", built)


def _credential(path: str | None) -> str:
    if path is not None:
        try:
            return Path(path).read_text(encoding="utf-8").strip()
        except OSError as error:
            raise CommandError(f"--credential-file {path}: {error.strerror}") from None
        except UnicodeDecodeError as error:
            # The position only: the bytes are (part of) a credential.
            raise CommandError(
                f"--credential-file {path}: not UTF-8 text (byte {error.start}); a credential "
                "is text"
            ) from None
    credential = os.environ.get(CREDENTIAL_VARIABLE)
    if not credential:
        raise CommandError(
            f"{AUTHENTICATOR_VARIABLE} is set, so the operator's credential is needed: give "
            f"--credential-file or set {CREDENTIAL_VARIABLE}"
        )
    return credential
