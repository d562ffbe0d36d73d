"""stageware end to end against Strands 1.62 and Pydantic AI 2.68, as a user runs them.

Run with ``python -m tests.benchmarks.end_to_end`` (``--quick`` for one short round). Each
framework runs in its own interpreter (``_e2e_worker``), against one loopback
OpenAI-compatible server in a process of its own (``_loopback_openai``), which answers
every invocation with one tool round: the model asks for the ``echo`` tool (a 2 KB
result), gets its result, and answers. Every framework gets the same agent (system
prompt, tool, prompt, maximum tokens; see ``_e2e_frameworks``). In each round every
worker runs once, in an order that shifts from round to round; a second stageware worker
runs beside the first, and its ratio to the first (the A/A line) shows what the machine's
noise alone does to a ratio. Ratios are taken within a round, where both sides met the
same machine, and the median over rounds is reported. Strands and Pydantic AI are
measured where they are installed (the ``benchmarks`` extra).

What each worker measures (CPU is the worker's own, not the server's):

- **a growing conversation**: one agent on a client shared with nothing else, a run of
  turns from an empty history (0 to 240 messages at the default size, each turn adding
  four), every framework sending the whole conversation (Strands with its
  ``NullConversationManager``, since its default one keeps only the last 40 messages); CPU
  per turn;
- **200 agents at once**: 200 agents on one shared client, one turn each, all started
  together; CPU and wall time of the turns;
- **RSS of live agents**: agents made as shipped (each framework's default way to make an
  OpenAI-compatible model from a URL and a key), ready to answer, all kept; the resident
  set's growth, per 100 agents;
- **building an agent** as shipped: CPU ms per agent, timed while the live agents are made.

``measure()`` returns these figures by key (``<fw>`` is ``stageware``, ``strands`` or
``pydantic_ai``; a framework that is not installed has no keys):

- ``conversation_cpu_ms_per_turn.<fw>``: CPU ms per turn of the growing conversation;
- ``concurrent_cpu_ms_per_agent.<fw>``, ``concurrent_wall_s.<fw>``: the 200 agents' turns,
  CPU ms per agent and wall seconds for all;
- ``rss_kib_per_100_agents.<fw>``: resident set growth per 100 live agents, KiB;
- ``build_cpu_ms.<fw>``: CPU ms to build one agent;
- ``<figure>/<fw>`` for each figure above (``conversation_cpu``, ``concurrent_cpu``,
  ``concurrent_wall``, ``rss``, ``build``): stageware's figure over *fw*'s, paired by
  round; ``<figure>/A-A``: the first stageware worker's over the second's (≈ 1.00).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import statistics
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STAGEWARE = "stageware"
AA = "A-A"
"""The second stageware worker: the same code, measured as a separate framework."""


@dataclass(frozen=True)
class Sizes:
    """How much each worker does per round (see ``_e2e_worker``'s tasks)."""

    agents: int
    conversation: int
    concurrent: int


DEFAULT_SIZES = Sizes(agents=100, conversation=60, concurrent=200)
QUICK_SIZES = Sizes(agents=20, conversation=10, concurrent=50)
DEFAULT_ROUNDS = 3
QUICK_ROUNDS = 1

# Each figure (see figures_of): the prefix of its keys in measure()'s result, and its unit.
FIGURES = {
    "conversation_cpu": ("conversation_cpu_ms_per_turn", "ms"),
    "concurrent_cpu": ("concurrent_cpu_ms_per_agent", "ms"),
    "concurrent_wall": ("concurrent_wall_s", "s"),
    "rss": ("rss_kib_per_100_agents", "KiB"),
    "build": ("build_cpu_ms", "ms"),
}


def figures_of(raw: dict[str, float], sizes: Sizes) -> dict[str, float]:
    """One worker's JSON as the figures of ``FIGURES``, scaled per turn, agent or 100."""
    return {
        "conversation_cpu": raw["conversation_cpu_s"] * 1e3 / sizes.conversation,
        "concurrent_cpu": raw["concurrent_cpu_s"] * 1e3 / sizes.concurrent,
        "concurrent_wall": raw["concurrent_wall_s"],
        "rss": raw["rss_kib"] * 100 / sizes.agents,
        "build": raw["build_cpu_s"] * 1e3 / sizes.agents,
    }


def installed_frameworks() -> list[str]:
    """stageware, and Strands and Pydantic AI where they can be imported."""
    return [STAGEWARE] + [
        name for name in ("strands", "pydantic_ai") if importlib.util.find_spec(name) is not None
    ]


@contextmanager
def loopback_server() -> Iterator[str]:
    """Start the loopback server in its own process; yield its base URL; stop it."""
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.benchmarks._loopback_openai"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdin is not None
    assert server.stdout is not None
    try:
        port = server.stdout.readline().strip()
        if not port.isdigit():
            raise RuntimeError(f"the loopback server did not start (it printed {port!r})")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.stdin.close()  # its signal to stop
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def worker_arguments(framework: str, base_url: str, sizes: Sizes) -> list[str]:
    """The command line of one round of *framework*'s worker."""
    arguments = [sys.executable, "-m", "tests.benchmarks._e2e_worker", framework, base_url]
    for task, size in asdict(sizes).items():
        arguments += [f"--{task}", str(size)]
    return arguments


def run_worker(framework: str, base_url: str, sizes: Sizes) -> dict[str, float]:
    """One round of *framework*'s worker: its JSON figures. Raises if the worker failed."""
    done = subprocess.run(
        worker_arguments(framework, base_url, sizes),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"the {framework} worker failed (exit {done.returncode}):\n{done.stderr[-2000:]}"
        )
    figures: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return figures


def sample(rounds: int, sizes: Sizes) -> dict[str, list[dict[str, float]]]:
    """Each worker's figures, one entry per round; the workers' order shifts each round."""
    frameworks = installed_frameworks()
    workers = {name: name for name in frameworks} | {AA: STAGEWARE}
    order = list(workers)
    samples: dict[str, list[dict[str, float]]] = {label: [] for label in workers}
    with loopback_server() as base_url:
        for round_ in range(rounds):
            shift = round_ % len(order)
            for label in order[shift:] + order[:shift]:
                raw = run_worker(workers[label], base_url, sizes)
                samples[label].append(figures_of(raw, sizes))
    return samples


def _ratio(ours: float, theirs: float) -> float:
    # A resident set that did not grow (a page-sized figure over few agents) has no ratio.
    return ours / theirs if theirs > 0 else math.nan


def summarise(samples: dict[str, list[dict[str, float]]]) -> dict[str, float]:
    """Medians of every figure, and stageware's ratios paired by round (module docstring)."""
    result: dict[str, float] = {}
    for figure, (key, _unit) in FIGURES.items():
        for label, rounds in samples.items():
            if label != AA:
                result[f"{key}.{label}"] = statistics.median(r[figure] for r in rounds)
        for label, rounds in samples.items():
            if label == STAGEWARE:
                continue
            result[f"{figure}/{label}"] = statistics.median(
                _ratio(ours[figure], theirs[figure])
                for ours, theirs in zip(samples[STAGEWARE], rounds, strict=True)
            )
    return result


def measure(*, quick: bool = False) -> dict[str, float]:
    """Run the comparison (one short round with *quick*) and return the figures by key."""
    rounds, sizes = (QUICK_ROUNDS, QUICK_SIZES) if quick else (DEFAULT_ROUNDS, DEFAULT_SIZES)
    return summarise(sample(rounds, sizes))


def print_table(figures: dict[str, float]) -> None:
    """The figures as a markdown table: one row per figure, one column per framework."""
    frameworks = [name for name in installed_frameworks() if name != STAGEWARE]
    others = [*frameworks, AA]
    header = ["figure", STAGEWARE, *frameworks, *(f"stageware / {name}" for name in others)]
    print("| " + " | ".join(header) + " |")
    print("|" + " --- |" * len(header))
    for figure, (key, unit) in FIGURES.items():
        cells = [f"{key} ({unit})"]
        cells += [f"{figures[f'{key}.{name}']:.1f}" for name in [STAGEWARE, *frameworks]]
        cells += [f"{figures[f'{figure}/{name}']:.2f}" for name in others]
        print("| " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="one short round: a rough check")
    args = parser.parse_args()
    missing = {"strands", "pydantic_ai"} - set(installed_frameworks())
    if missing:
        print(f"not installed, so not measured: {sorted(missing)} (pip install -e '.[benchmarks]')")
    print_table(measure(quick=args.quick))


if __name__ == "__main__":
    main()
