"""Tracing is off unless the application configured it, and off means nothing at all.

Each case runs in a fresh interpreter: which modules are loaded, and the global tracer
provider, are per process.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import stageware

_RUN = """
import json, sys
{setup}
from stageware import Agent, InvokeModelStage, ScriptedModel, ScriptedToolCall, ScriptedTurn, tool

@tool
def echo(text: str) -> str:
    '''Echo.

    Args:
        text: What to echo.
    '''
    return text

async def wrap(context, next_fn):
    async for event in next_fn(context):
        yield event

turn = ScriptedTurn(tool_calls=[ScriptedToolCall("echo", {{"text": "hi"}})])
agent = Agent(ScriptedModel([turn, "done"]), tools=[echo])
agent.add_middleware(InvokeModelStage, wrap)
agent.add_middleware(InvokeModelStage.Input, lambda c: c)
assert agent("go").stop_reason == "end_turn"
{report}
"""

_LOADED = (
    "loaded = sorted(m for m in sys.modules if m.startswith('opentelemetry') or 'tracing' in m)"
)


def _run(setup: str, report: str) -> object:
    code = _RUN.format(setup=setup, report=report)
    completed = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    )
    return json.loads(completed.stdout.splitlines()[-1])


def test_without_opentelemetry_imported_nothing_of_it_is_loaded() -> None:
    loaded = _run("", f"{_LOADED}\nprint(json.dumps(loaded))")
    # The switch itself is loaded (it is what decides), nothing that imports OpenTelemetry.
    assert loaded == ["stageware._host.tracing"]


def test_with_the_api_s_default_provider_no_tracer_is_acquired_and_no_span_made() -> None:
    setup = """
from opentelemetry import trace
acquired = []
for provider in (trace.ProxyTracerProvider, trace.NoOpTracerProvider):
    original = provider.get_tracer
    def spy(self, *args, original=original, **kwargs):
        acquired.append(args[0] if args else kwargs)
        return original(self, *args, **kwargs)
    provider.get_tracer = spy
"""
    report = """
spans = "stageware._host.tracing._spans" in sys.modules
print(json.dumps([acquired, agent._core.tracing._registry is None, spans]))
"""
    assert _run(setup, report) == [[], True, False]


def test_a_global_provider_set_by_the_application_is_used() -> None:
    setup = """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
"""
    report = "print(json.dumps(sorted({s.name for s in exporter.get_finished_spans()})))"
    assert _run(setup, report) == [
        "agent_pass",
        "chat scripted",
        "execute_tool echo",
        "invoke_agent agent",
        "middleware InvokeModelStage.Input",
        "middleware InvokeModelStage.Wrap",
    ]


def test_only_the_tracing_modules_that_a_traced_run_loads_import_opentelemetry() -> None:
    package = Path(stageware.__file__).parent
    importing: list[str] = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        # Imports under `if TYPE_CHECKING:` never run.
        checked = {
            id(node)
            for block in ast.walk(tree)
            if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
            for statement in block.body
            for node in ast.walk(statement)
        }
        for node in ast.walk(tree):
            if id(node) in checked:
                continue
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(name.split(".")[0] == "opentelemetry" for name in names):
                importing.append(str(path.relative_to(package)))
    assert sorted(set(importing)) == ["_host/tracing/_handlers.py", "_host/tracing/_spans.py"]
