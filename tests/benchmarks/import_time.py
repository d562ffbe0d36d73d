"""Import time against Strands, each import in a fresh interpreter, reported as ratios.

Run with ``python -m tests.benchmarks.import_time``. Each statement runs as
``python -c STATEMENT`` in a new process, the statements interleaved round by round so
that machine noise hits them alike; the median wall time of each is reported relative to
``import strands`` (strands-agents 1.62, which imports its ``Agent`` with the package),
or, when Strands is not installed, to an interpreter that imports nothing.

``import stageware`` alone loads almost nothing: its public names load on first use. What
an application pays before it can build an agent is ``from stageware import Agent``, so
that is the line to compare with ``import strands``.

The children may write and read cached bytecode even where the environment turns that
off (``PYTHONDONTWRITEBYTECODE``), as an installed wheel's modules would be; a first,
uncounted round writes it.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time

from tests.benchmarks._report import print_ratios

NOTHING = "pass"
STRANDS = "import strands"
STAGEWARE = {
    "import stageware": "import stageware",
    "from stageware import Agent": "from stageware import Agent",
    "import stageware.policy": "import stageware.policy",
}


def strands_installed() -> bool:
    """Whether Strands can be imported here (the ``benchmarks`` extra installs it)."""
    return importlib.util.find_spec("strands") is not None


def statements() -> dict[str, str]:
    """What is timed, by label: the interpreter alone, stageware's imports, and Strands'."""
    timed = {"python (imports nothing)": NOTHING, **STAGEWARE}
    if strands_installed():
        timed[STRANDS] = STRANDS
    return timed


def _child_environment() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def _time(statement: str, environment: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", statement], check=True, env=environment)
    return time.perf_counter() - start


def measure(rounds: int) -> dict[str, list[float]]:
    """Wall seconds of each statement in :func:`statements`, one sample per round."""
    timed = statements()
    environment = _child_environment()
    for statement in timed.values():  # warm-up: bytecode caches, the OS's file cache
        _time(statement, environment)
    timings: dict[str, list[float]] = {label: [] for label in timed}
    for _ in range(rounds):
        for label, statement in timed.items():
            timings[label].append(_time(statement, environment))
    return timings


def ratios_to_strands(timings: dict[str, list[float]]) -> dict[str, float] | None:
    """Each stageware statement's median over ``import strands``'s; ``None`` without Strands."""
    if STRANDS not in timings:
        return None
    reference = statistics.median(timings[STRANDS])
    return {label: statistics.median(timings[label]) / reference for label in STAGEWARE}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    if not strands_installed():
        print(
            "strands-agents is not installed, so `import strands` is skipped and the ratios "
            "are to an interpreter that imports nothing (pip install -e '.[benchmarks]')"
        )
    timings = measure(args.rounds)
    baseline = STRANDS if STRANDS in timings else "python (imports nothing)"
    print_ratios(timings, baseline, 1, "ms", 1e3)


if __name__ == "__main__":
    main()
