"""What building an agent on an OpenAI-compatible model costs: CPU, and memory per live agent.

Run with ``python -m tests.benchmarks.agent_build`` (``--quick`` for fewer rounds). Each
agent is what a user writes: an ``OpenAIModel`` with a base URL and a key, and two
``@tool`` functions; Strands 1.62's is the same with its own ``OpenAIModel`` (measured
when ``strands-agents`` is installed, the ``benchmarks`` extra). Nothing is sent: the
endpoint is never contacted.

- **CPU to build an agent**: the configurations take turns, round by round, in this
  process, each building a batch of agents; the median CPU time (``time.process_time``)
  per agent. "stageware (A/A)" is stageware again, to show the noise between two
  identical configurations.
- **Memory per live agent**: a fresh interpreter per configuration and round (so that one
  library's imports and caches do not count against the other), which builds one agent
  (paying for what is built once per process), then 100 more that it keeps alive. The
  resident set (RSS, from ``/proc``) and the memory ``tracemalloc`` traced are read before
  and after the 100; the medians over rounds, divided by 100.

:func:`measure` returns these figures (Strands' and the ratios only when it is installed):

- ``build_ms``: CPU ms to build one stageware agent.
- ``build_ms_scripted``: the same with ``ScriptedModel`` instead of ``OpenAIModel``.
- ``build_aa_ratio``: stageware against itself (the noise; ideally 1.0).
- ``build_ms_strands``, ``build_ratio``: Strands' CPU ms, and stageware's / Strands'.
- ``rss_kib_per_agent``, ``traced_kib_per_agent``: stageware's KiB per live agent.
- ``rss_kib_per_agent_strands``, ``traced_kib_per_agent_strands``: Strands' KiB.
- ``rss_ratio``, ``traced_ratio``: stageware's / Strands' (per 100 agents as per agent).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stageware import Agent, ScriptedModel, tool
from stageware.openai import OpenAIModel

__all__ = ["measure"]

# Never contacted: building an agent sends nothing.
BASE_URL = "http://127.0.0.1:9/v1"
LIVE_AGENTS = 100
_ROOT = Path(__file__).resolve().parents[2]


@tool
def lookup(query: str) -> str:
    """Look something up.

    Args:
        query: What to look up.
    """
    return query


@tool
def weather(city: str, days: int = 1) -> str:
    """The weather in a city.

    Args:
        city: The city.
        days: How many days ahead.
    """
    return city


def build_stageware() -> object:
    return Agent(model=OpenAIModel("m", base_url=BASE_URL, api_key="k"), tools=[lookup, weather])


def build_scripted() -> object:
    return Agent(model=ScriptedModel(["ok"]), tools=[lookup, weather])


def strands_builder() -> Callable[[], object]:
    """A function that builds the Strands agent; imported by name, as ``strands`` is optional."""
    strands: Any = importlib.import_module("strands")
    strands_openai: Any = importlib.import_module("strands.models.openai")

    @strands.tool  # type: ignore[untyped-decorator]
    def strands_lookup(query: str) -> str:
        """Look something up.

        Args:
            query: What to look up.
        """
        return query

    @strands.tool  # type: ignore[untyped-decorator]
    def strands_weather(city: str, days: int = 1) -> str:
        """The weather in a city.

        Args:
            city: The city.
            days: How many days ahead.
        """
        return city

    def build() -> object:
        model = strands_openai.OpenAIModel(
            client_args={"base_url": BASE_URL, "api_key": "k"}, model_id="m"
        )
        agent: object = strands.Agent(
            model=model, tools=[strands_lookup, strands_weather], callback_handler=None
        )
        return agent

    return build


def strands_installed() -> bool:
    return importlib.util.find_spec("strands") is not None


def _builders(with_strands: bool) -> dict[str, Callable[[], object]]:
    found: dict[str, Callable[[], object]] = {
        "stageware": build_stageware,
        "stageware (A/A)": build_stageware,
        "stageware, ScriptedModel": build_scripted,
    }
    if with_strands:
        found["strands"] = strands_builder()
    return found


def build_cpu(rounds: int, batch: int, with_strands: bool) -> dict[str, float]:
    """Median CPU seconds to build one agent, per configuration, interleaved by round."""
    builders = _builders(with_strands)
    samples: dict[str, list[float]] = {name: [] for name in builders}
    for build in builders.values():
        build()  # imports, caches and first-use costs out of the way
    for _ in range(rounds):
        for name, build in builders.items():
            kept = []
            gc.collect()
            start = time.process_time()
            for _ in range(batch):
                kept.append(build())
            samples[name].append((time.process_time() - start) / batch)
            del kept
    return {name: statistics.median(values) for name, values in samples.items()}


def _rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


def _child(name: str) -> dict[str, float]:
    """Runs in a fresh interpreter: bytes per live agent of configuration *name*."""
    build = strands_builder() if name == "strands" else build_stageware
    build()
    gc.collect()
    before = _rss_bytes()
    agents = [build() for _ in range(LIVE_AGENTS)]
    gc.collect()
    rss = (_rss_bytes() - before) / LIVE_AGENTS
    tracemalloc.start()
    traced = [build() for _ in range(LIVE_AGENTS)]
    gc.collect()
    traced_bytes = tracemalloc.get_traced_memory()[0] / LIVE_AGENTS
    tracemalloc.stop()
    del agents, traced
    return {"rss": rss, "traced": traced_bytes}


def memory_per_agent(rounds: int, with_strands: bool) -> dict[str, dict[str, float]]:
    """Median RSS and traced bytes per live agent, each configuration in fresh interpreters."""
    names = ["stageware", *(["strands"] if with_strands else [])]
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    for _ in range(rounds):
        for name in names:
            done = subprocess.run(
                [sys.executable, "-m", "tests.benchmarks.agent_build", "--child", name],
                capture_output=True,
                text=True,
                cwd=_ROOT,
                check=True,
                timeout=300,
            )
            samples[name].append(json.loads(done.stdout))
    return {
        name: {
            key: statistics.median(sample[key] for sample in values) for key in ("rss", "traced")
        }
        for name, values in samples.items()
    }


def measure(*, quick: bool = False) -> dict[str, float]:
    """Build agents and report the figures the module docstring lists."""
    with_strands = strands_installed()
    seconds = build_cpu(
        rounds=3 if quick else 9, batch=20 if quick else 50, with_strands=with_strands
    )
    memory = memory_per_agent(rounds=1 if quick else 3, with_strands=with_strands)
    figures = {
        "build_ms": seconds["stageware"] * 1e3,
        "build_ms_scripted": seconds["stageware, ScriptedModel"] * 1e3,
        "build_aa_ratio": seconds["stageware (A/A)"] / seconds["stageware"],
        "rss_kib_per_agent": memory["stageware"]["rss"] / 1024,
        "traced_kib_per_agent": memory["stageware"]["traced"] / 1024,
    }
    if with_strands:
        figures |= {
            "build_ms_strands": seconds["strands"] * 1e3,
            "build_ratio": seconds["stageware"] / seconds["strands"],
            "rss_kib_per_agent_strands": memory["strands"]["rss"] / 1024,
            "traced_kib_per_agent_strands": memory["strands"]["traced"] / 1024,
            "rss_ratio": memory["stageware"]["rss"] / memory["strands"]["rss"],
            "traced_ratio": memory["stageware"]["traced"] / memory["strands"]["traced"],
        }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds: a rough check")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args.child)))
        return
    figures = measure(quick=args.quick)
    print("Building an agent (OpenAIModel, two tools); Strands 1.62 where installed")
    for key, value in figures.items():
        print(f"  {key:<30} {value:>10.3f}")


if __name__ == "__main__":
    main()
