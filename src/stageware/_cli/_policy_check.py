"""``stageware policy check``: validate a policy spec, and show what runs where, in order.

Exit status 0 when the spec (and the baseline profile) is valid, 2 with its problems as
``file:line: path: message`` lines when not. Importing this module loads nothing of the
policy layer: the command line builds its parser from :func:`configure` without loading
the generated package.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from stageware._policy._spec import PolicySpec

__all__ = ["DESCRIPTION", "HELP", "configure", "run"]

HELP = "validate a policy spec and show the middleware each hook point runs, in order"
DESCRIPTION = (
    "Validate a policy spec (and the org baseline profile) and print, per hook point, the "
    "middleware that run there in execution order, with band, fail mode and timeout. "
    "`package.module:attribute` references are imported with the current directory on "
    "the module search path. Exit status 2 with `file:line: path: message` lines when "
    "the spec is invalid."
)

EXIT_OK = 0
EXIT_INVALID = 2


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the command's arguments on *parser*."""
    parser.add_argument("spec", metavar="POLICY_YAML", type=Path, help="the policy spec")
    parser.add_argument(
        "--baseline",
        metavar="ORG_YAML",
        type=Path,
        help="the org baseline profile, the only file that may use the baseline band",
    )


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Check the spec named in *args*, reporting on *out* and *err*; return the exit status."""
    from stageware._policy._errors import SpecError
    from stageware._policy._spec import read_policy

    spec_path: Path = args.spec
    baseline: Path | None = args.baseline
    # As `python -m` would: the project's own modules are named relative to where it runs.
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        spec = read_policy(spec_path, baseline=baseline)
    except SpecError as exc:
        print(exc, file=err)
        return EXIT_INVALID
    except (OSError, ImportError) as exc:
        print(f"stageware policy check: {_reason(exc)}", file=err)
        return EXIT_INVALID
    _show(spec, spec_path, baseline, out)
    return EXIT_OK


def _reason(exc: OSError | ImportError) -> str:
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    return str(exc)


def _show(spec: PolicySpec, path: Path, baseline: Path | None, out: TextIO) -> None:
    from stageware._generated.policy_points import HOOK_POINTS, Direction, HookPoint

    engine = spec.engine()
    profile = "" if baseline is None else f" with the baseline profile {baseline}"
    print(f"{path}{profile} is valid: {len(spec.entries)} middleware installed", file=out)
    sections: list[tuple[str, list[tuple[str, str, str, str, str, str]]]] = []
    for point in HookPoint:
        if not engine.order(point):
            continue
        direction = HOOK_POINTS[point].direction
        first = "outermost" if direction is Direction.INBOUND else "innermost"
        budget = engine.retry_budget(point)
        retries = f"; retry budget {budget}" if budget else ""
        header = f"{point.value} ({direction.value}: {first} band first{retries})"
        rows = [
            (
                f"{number}.",
                entry.name,
                entry.effective_band.value,
                entry.effective_fail_mode.value,
                _timeout(entry.effective_timeout),
                spec.sources[entry.name],
            )
            for number, entry in enumerate(engine.order(point), start=1)
        ]
        sections.append((header, rows))
    # One set of column widths for the whole listing, so it reads as one table.
    widths = [
        max((len(row[i]) for _, rows in sections for row in rows), default=0) for i in range(5)
    ]
    for header, rows in sections:
        print(f"\n{header}", file=out)
        for row in rows:
            cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
            print("  " + "  ".join([*cells, row[-1]]), file=out)


def _timeout(limit: timedelta | None) -> str:
    if limit is None:
        return "no timeout"
    seconds = limit.total_seconds()
    return f"timeout {seconds * 1000:g}ms" if seconds < 1 else f"timeout {seconds:g}s"
