"""What ``ScriptedModel`` keeps per call over a long conversation, measured with tracemalloc.

Run with ``python -m tests.benchmarks.scripted_memory``. A conversation of 5,000 messages
(prompts, tool calls, 2 KB tool results and answers) is sent to the model again and again,
one new user message longer each time, as an agent sends its history; every stream is
read to the end. Reported per call: the memory still held afterwards by what the model
allocated (its records of the requests), the memory the whole process grew by (which
includes the conversation's own new messages), and the time of a call.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import tracemalloc
from dataclasses import dataclass

import anyio

from stageware import Messages, ScriptedModel
from stageware._host.models import _scripted
from tests.benchmarks._conversation import conversation

# Enough frames to see the model's module under copy.deepcopy and the list it fills.
_FRAMES = 16


@dataclass(frozen=True)
class MemoryPerCall:
    """Bytes and seconds per ``stream`` call, at a conversation length.

    Attributes:
        messages: Messages in the conversation at the first call.
        calls: How many calls were measured.
        model_bytes: Bytes the model's own allocations still hold, per call.
        process_bytes: Bytes the process grew by, per call (the new messages included).
        seconds: Median seconds of a call, the stream read to the end.
    """

    messages: int
    calls: int
    model_bytes: float
    process_bytes: float
    seconds: float


async def _calls(model: ScriptedModel, history: Messages, calls: int) -> list[float]:
    seconds: list[float] = []
    for index in range(calls):
        history.append({"role": "user", "content": [{"text": f"Follow-up {index}?"}]})
        start = time.perf_counter()
        async for _event in model.stream(history):
            pass
        seconds.append(time.perf_counter() - start)
    return seconds


def measure(messages: int = 5000, calls: int = 20) -> MemoryPerCall:
    """Run *calls* calls over a conversation of *messages*; what each call kept and took."""
    # Timed apart from the memory measurement: tracemalloc slows every allocation down.
    seconds = anyio.run(_calls, ScriptedModel(["ok"] * calls), conversation(messages), calls)
    history = conversation(messages)
    model = ScriptedModel(["ok"] * (calls + 1))
    tracemalloc.start(_FRAMES)
    try:
        # One call first, traced so that its replacement later counts as what it is: what
        # a model holds once (the last call's messages), whatever the number of calls.
        anyio.run(_calls, model, history, 1)
        gc.collect()
        before = tracemalloc.take_snapshot()
        anyio.run(_calls, model, history, calls)
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    by_the_model = [tracemalloc.Filter(True, _scripted.__file__, all_frames=True)]
    model_held = after.filter_traces(by_the_model).compare_to(
        before.filter_traces(by_the_model), "filename"
    )
    process_held = after.compare_to(before, "filename")
    return MemoryPerCall(
        messages=messages,
        calls=calls,
        model_bytes=sum(stat.size_diff for stat in model_held) / calls,
        process_bytes=sum(stat.size_diff for stat in process_held) / calls,
        seconds=statistics.median(seconds),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    result = measure(args.messages, args.calls)
    print(f"ScriptedModel, {result.messages} messages, {result.calls} calls, per call:")
    print(f"  held by the model    {result.model_bytes / 1024:>10.1f} KiB")
    print(f"  process growth       {result.process_bytes / 1024:>10.1f} KiB")
    print(f"  time                 {result.seconds * 1e3:>10.2f} ms")


if __name__ == "__main__":
    main()
