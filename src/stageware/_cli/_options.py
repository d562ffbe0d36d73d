"""Options that go together: refusing one given without the option it belongs to.

An option that does nothing where it is given is a mistake worth a word, not a silent
no-op: ``--comment`` without ``--resolve`` would otherwise be lost.
"""

from __future__ import annotations

import argparse

from ._errors import CommandError

__all__ = ["refuse_without", "required"]


def refuse_without(args: argparse.Namespace, needed: str, **options: str) -> None:
    """Refuse *options* (attribute: option) that were given without *needed*.

    Raises:
        CommandError: Naming the first such option.
    """
    for attribute, option in options.items():
        if getattr(args, attribute) is not None:
            raise CommandError(f"{option} goes with {needed}")


def required(args: argparse.Namespace, attribute: str, action: str) -> str:
    """The value of ``--attribute``, which *action* needs.

    Raises:
        CommandError: It was not given.
    """
    value: str | None = getattr(args, attribute)
    if value is None:
        raise CommandError(f"{action} needs --{attribute}")
    return value
