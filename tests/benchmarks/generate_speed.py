"""How long ``stageware generate`` takes on a large schema, side by side with a small one.

Run with ``python -m tests.benchmarks.generate_speed``. It writes a copy of the built-in
schema widened to 50 stages (each a copy of ExecuteTool with its own context), then runs
the real command, a fresh process each time, on that schema and on the built-in one,
interleaved round by round so that machine noise hits both alike. It prints the medians,
their ratio, and the ratio of each to a bare ``python -c pass`` (interpreter start-up),
which no generator can beat. The target is a 50-stage run under one second on the
project's machines.

A run regenerates what the previous one wrote, as a developer's does; the "edited" row
first changes one stage's documentation, so the modules of the stage surface are rendered,
formatted and import-checked again (the payload modules are not: their input did not
change); the "cold" row deletes the output first, the generation record in its
``__pycache__`` with it, so every module is converted, formatted and imported, as in a
fresh checkout or CI.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "schema"


def widened_schema(directory: Path, stages: int) -> Path:
    """Copy the built-in schema into *directory*, with ExecuteTool cloned to *stages* stages."""
    shutil.copytree(SCHEMA, directory, dirs_exist_ok=True)
    path = directory / "stages.yaml"
    text = path.read_text(encoding="utf-8")
    start = text.index("\n  ExecuteTool:\n")
    end = text.index("\n  AgentStream:\n")
    block = text[start:end]
    clones = [
        re.sub(r"\n  ExecuteTool:\n", f"\n  Tool{number}:\n", block)
        # Interrupt ids must stay distinct per stage.
        .replace("v2:middleware_execute_tool:", f"v2:middleware_tool_{number}:")
        for number in range(stages - 3)
    ]
    path.write_text(text[:end] + "".join(clones) + text[end:], encoding="utf-8")
    return path


def _command(schema: Path, output: Path) -> list[str]:
    # The console script the user runs, installed next to this interpreter.
    return [
        str(Path(sys.executable).parent / "stageware"),
        "generate",
        "--schema",
        str(schema),
        "--output",
        str(output),
    ]


def _edit(schema: Path) -> None:
    """Change one stage's documentation in *schema*, differently on every call."""
    text = schema.read_text(encoding="utf-8")
    marker = re.search(r"Wraps one tool call( \(edit \d+\))?\.", text)
    assert marker is not None, "the ExecuteTool stage's doc changed: update the benchmark"
    edits = int(re.sub(r"\D", "", marker.group(1) or "0")) + 1
    schema.write_text(
        text.replace(marker.group(0), f"Wraps one tool call (edit {edits}).", 1), encoding="utf-8"
    )


def _time(
    command: list[str], cwd: Path, fresh: Path | None = None, edit: Path | None = None
) -> float:
    """Seconds *command* takes in *cwd*, after deleting *fresh* and editing *edit*, if given."""
    if fresh is not None:
        shutil.rmtree(fresh, ignore_errors=True)
    if edit is not None:
        _edit(edit)
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--stages", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="stageware-bench-") as temporary:
        work = Path(temporary)
        large = widened_schema(work / "large", args.stages)
        small = widened_schema(work / "small", 3)
        edited = widened_schema(work / "edited", args.stages)
        cold = work / "out_cold"
        # Name: the command, the directory deleted and the schema edited before each run.
        runs: dict[str, tuple[list[str], Path | None, Path | None]] = {
            "python -c pass": ([sys.executable, "-c", "pass"], None, None),
            "generate, 3 stages": (_command(small, work / "out_small"), None, None),
            f"generate, {args.stages} stages": (_command(large, work / "out_large"), None, None),
            f"{args.stages} stages, edited": (_command(edited, work / "out_edited"), None, edited),
            f"{args.stages} stages, cold": (_command(large, cold), cold, None),
        }
        # A first run of each, untimed: it writes the output; later runs regenerate it.
        for command, _, _ in runs.values():
            _time(command, work)
        timings: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.rounds):
            for name, (command, fresh, edit) in runs.items():
                timings[name].append(_time(command, work, fresh, edit))
    medians = {name: statistics.median(samples) for name, samples in timings.items()}
    start_up = medians["python -c pass"]
    print(f"{'configuration':<24} {'seconds':>8} {'/ start-up':>11}")
    for name, median in medians.items():
        print(f"{name:<24} {median:>8.3f} {median / start_up:>11.1f}")
    large_name = f"generate, {args.stages} stages"
    ratio = medians[large_name] / medians["generate, 3 stages"]
    print(f"{args.stages} stages / 3 stages: {ratio:.2f}")


if __name__ == "__main__":
    main()
