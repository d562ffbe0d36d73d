"""What policy middleware cost an invocation, by how many are installed.

Run with ``python -m tests.benchmarks.policy_scaling`` (``--quick`` for fewer rounds).
Every configuration runs the same invocation (a prompt, one tool call, a final answer: two
model calls on a ``ScriptedModel``) on an agent whose ``PolicyEngine`` holds 0 (no policy
at all), 1, 10 or 50 policy middleware that return ``Continue()``, and 50 that each have a
2 s timeout; the agent without a policy runs twice, so that the ratio of the two (A/A)
shows the noise. Configurations are interleaved round by round in one process, each round
times a batch of invocations in CPU time (``time.process_time``: the machine is shared),
and each figure is the median over rounds, reported relative to the agent without a
policy.

The mix is what an organisation's guardrails declare, not the cheapest one: every
middleware is declared for ``tool.before``, ``tool.after``, ``model.request`` and
``model.response``, the tool and model hook points, with alternating fail modes and no
timeout (the declaration's default), and reads the event and its env. One invocation
calls each middleware 6 times (a tool call, two model calls): 300 middleware calls at 50.
A timeout makes each call run inside an anyio cancel scope, which costs more than the
call itself: the last configuration shows how much.

``measure()`` returns (keys):

- ``policy_1_ratio``, ``policy_10_ratio``, ``policy_50_ratio``: an invocation with 1, 10,
  50 Continue middleware / the same invocation with no policy.
- ``policy_50_timeout_ratio``: the same with 50 middleware that each declare a timeout.
- ``aa_noise_ratio``: the agent without a policy against itself, measured the same way:
  how far from 1.0 noise alone moves a ratio in this run.
- ``per_middleware_call_us``: what one middleware call at one hook point adds, in µs: the
  time 50 middleware add to an invocation, divided by their 300 calls.
- ``per_timed_middleware_call_us``: the same for middleware with a timeout.
- ``no_policy_invocation_us``: an invocation without a policy, in µs, for context.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import anyio

from stageware import Agent, ScriptedModel, ScriptedToolCall, ScriptedTurn, tool
from stageware.policy import Continue, HookEvent, MiddlewareDef, PolicyEngine, PolicyEnv, middleware

COUNTS = (0, 1, 10, 50)
MOST = COUNTS[-1]
TIMED = "50 timed"
AGAIN = "no policy, again"
CONFIGURATIONS: tuple[int | str, ...] = (*COUNTS, TIMED, AGAIN)
HOOKS = ("tool.before", "tool.after", "model.request", "model.response")
CALLS_PER_MIDDLEWARE = 6
"""Hook calls per middleware per invocation: tool.before and tool.after once, model.request
and model.response once per model call (two)."""


@tool
async def lookup(query: str) -> str:
    """Look something up.

    Args:
        query: What to look up.
    """
    return f"found {query}"


def guardrail(index: int, timeout: str | None = None) -> MiddlewareDef:
    """The *index*-th of the installed middleware: it looks at the event and continues."""

    async def check(event: HookEvent, env: PolicyEnv) -> Continue:
        # What a real guardrail reads before it decides; here it always lets the step go.
        _ = event.run_id, env.attempt
        return Continue()

    return middleware(
        hooks=HOOKS,
        fail_mode="closed" if index % 2 else "open",
        timeout=timeout,
        name=f"guardrail_{index}",
    )(check)


def script(invocations: int) -> ScriptedModel:
    turn = ScriptedTurn(tool_calls=[ScriptedToolCall("lookup", {"query": "order 1234"})])
    return ScriptedModel([turn, "done"] * invocations)


def build(configuration: int | str, invocations: int) -> Agent:
    policy: PolicyEngine | None
    if configuration == TIMED:
        policy = PolicyEngine([guardrail(index, "2s") for index in range(MOST)])
    elif configuration == AGAIN:
        policy = None
    else:
        assert isinstance(configuration, int)
        policy = (
            PolicyEngine([guardrail(index) for index in range(configuration)])
            if configuration
            else None
        )
    return Agent(script(invocations), tools=[lookup], policy=policy)


async def _cpu_seconds(agent: Agent, invocations: int) -> float:
    # What the configuration before left behind is not this one's to collect.
    gc.collect()
    start = time.process_time()
    for _ in range(invocations):
        # A fresh history each time: what grows here is the policy, not the conversation.
        agent.messages = []
        await agent.invoke_async("Where is order 1234?")
    return time.process_time() - start


async def timings(rounds: int, invocations: int) -> dict[int | str, list[float]]:
    """CPU seconds per invocation, per configuration, one sample per round."""
    samples: dict[int | str, list[float]] = {name: [] for name in CONFIGURATIONS}
    for _ in range(rounds):
        for name in CONFIGURATIONS:
            agent = build(name, invocations)
            await agent.invoke_async("warm up")
            agent.model = script(invocations)
            samples[name].append(await _cpu_seconds(agent, invocations) / invocations)
    return samples


def measure(*, quick: bool = False) -> dict[str, float]:
    """Run the benchmark; the keys are listed in the module docstring."""
    rounds, invocations = (5, 40) if quick else (15, 100)
    medians = {
        name: statistics.median(values)
        for name, values in anyio.run(timings, rounds, invocations).items()
    }
    bare = medians[0]
    calls = MOST * CALLS_PER_MIDDLEWARE
    figures = {f"policy_{count}_ratio": medians[count] / bare for count in COUNTS if count}
    figures["policy_50_timeout_ratio"] = medians[TIMED] / bare
    figures["aa_noise_ratio"] = medians[AGAIN] / bare
    figures["per_middleware_call_us"] = (medians[MOST] - bare) / calls * 1e6
    figures["per_timed_middleware_call_us"] = (medians[TIMED] - bare) / calls * 1e6
    figures["no_policy_invocation_us"] = bare * 1e6
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds and invocations")
    args = parser.parse_args()
    figures = measure(quick=args.quick)
    width = max(map(len, figures))
    print(f"{'figure':<{width}} {'value':>9}")
    for key, value in figures.items():
        print(f"{key:<{width}} {value:>9.2f}")


if __name__ == "__main__":
    main()
