"""One round of measurements of one framework, in its own interpreter, printed as JSON.

``python -m tests.benchmarks._e2e_worker FRAMEWORK BASE_URL --TASK SIZE ...`` runs each
task given, in the order below, for *FRAMEWORK* (``stageware``, ``strands`` or
``pydantic_ai``) against the loopback server at *BASE_URL*, and prints one JSON object of
figures. CPU time is this process's (``time.process_time``, all its threads), so the
server's work and other processes on the machine are not counted. Before the first task
one agent runs one turn that is not counted, so imports, lazy initialisation and the first
connection are paid before any clock starts. The tasks:

- ``--agents N``: make N agents as shipped, ready to answer, and keep them all;
  ``build_cpu_s`` is the CPU it took and ``rss_kib`` how much the resident set grew
  (``/proc/self/statm``, after a garbage collection). The warm-up turn has loaded what
  every agent shares. The agents are dropped afterwards.
- ``--conversation N``: one agent on a shared client, N turns in a row, each adding a
  tool round (four messages) to its history; ``conversation_cpu_s`` and
  ``conversation_wall_s`` for all turns.
- ``--concurrent N``: N agents on one shared client, made first, then one turn on each,
  all at once; ``concurrent_cpu_s`` and ``concurrent_wall_s`` for the turns.

The agents task runs first, before the others have grown the heap.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import time

from tests.benchmarks._e2e_frameworks import FRAMEWORKS, PROMPT, make_agent, shared_client


def resident_kib() -> float:
    """This process's resident set size (Linux: ``/proc/self/statm``)."""
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1024


async def agents(framework: str, base_url: str, size: int) -> dict[str, float]:
    gc.collect()
    before = resident_kib()
    start = time.process_time()
    built = [make_agent(framework, base_url) for _ in range(size)]
    cpu = time.process_time() - start
    gc.collect()
    grown = resident_kib() - before
    del built  # kept until both were measured, so no destructor ran before
    return {"build_cpu_s": cpu, "rss_kib": grown}


async def conversation(framework: str, base_url: str, size: int) -> dict[str, float]:
    agent = make_agent(framework, base_url, shared_client(base_url))
    start_cpu, start_wall = time.process_time(), time.perf_counter()
    for _ in range(size):
        await agent(PROMPT)
    return {
        "conversation_cpu_s": time.process_time() - start_cpu,
        "conversation_wall_s": time.perf_counter() - start_wall,
    }


async def concurrent(framework: str, base_url: str, size: int) -> dict[str, float]:
    client = shared_client(base_url)
    agents = [make_agent(framework, base_url, client) for _ in range(size)]
    start_cpu, start_wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(agent(PROMPT) for agent in agents))
    return {
        "concurrent_cpu_s": time.process_time() - start_cpu,
        "concurrent_wall_s": time.perf_counter() - start_wall,
    }


TASKS = {"agents": agents, "conversation": conversation, "concurrent": concurrent}


async def run(framework: str, base_url: str, sizes: dict[str, int]) -> dict[str, float]:
    """The figures of every task with a size in *sizes*, run in the order of ``TASKS``."""
    await make_agent(framework, base_url)(PROMPT)  # the uncounted warm-up turn
    figures: dict[str, float] = {}
    for name, task in TASKS.items():
        if name in sizes:
            figures |= await task(framework, base_url, sizes[name])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("framework", choices=FRAMEWORKS)
    parser.add_argument("base_url")
    for name in TASKS:
        parser.add_argument(f"--{name}", type=int, metavar="N")
    args = parser.parse_args()
    sizes = {name: getattr(args, name) for name in TASKS if getattr(args, name) is not None}
    print(json.dumps(asyncio.run(run(args.framework, args.base_url, sizes))))


if __name__ == "__main__":
    main()
