"""The policy demo's story, ``stageware demo policy``: its scenes played in order.

The policy is data: ``load_policy("policy.yaml", baseline="org.yaml")`` reads the spec and
the org baseline profile shipped beside this module (``_cast``). The scenes (``_scenes``)
check their claims; one that does not hold raises ``DemoCheckError``, and the command
exits non-zero.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import TextIO

from stageware._demo._trace import Trace

from ._cast import Cast
from ._scenes import SCENES

__all__ = ["run_policy_demo"]


def run_policy_demo(out: TextIO, session_dir: Path | None = None) -> None:
    """Run the story, writing the trace to *out*.

    Raises:
        DemoCheckError: If a check of the story's claims fails.
        ImportError: If PyYAML, which reading a policy spec needs, is not installed.
    """
    out.write(
        "stageware demo policy: a refund desk agent on a scripted model, under a policy spec\n"
    )
    # The trace prints every decision. The engine logs them too, at WARNING for all but
    # Continue; with no handler configured, Python's last-resort handler would print
    # those records to stderr a second time. A handler here stops that, and leaves the
    # records to any handler the caller configured.
    logger = logging.getLogger("stageware.policy")
    quiet = logging.NullHandler()
    logger.addHandler(quiet)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            cast = Cast(Trace(out), (session_dir or Path(scratch)) / "sessions.sqlite")
            for scene in SCENES:
                scene(cast)
    finally:
        logger.removeHandler(quiet)
