"""Tokens of another generated package: refused by a host that runs stageware's stages.

A package generated from stageware's own (exported) schema has an ``InvokeModelStage`` of
its own, whose handlers type-check on an ``Agent`` exactly like stageware's. The agent runs
stageware's stages only, so a handler on the other token would never run: it is refused
at registration, naming both packages. A plain ``MiddlewareRegistry``, which runs
whatever stage its harness hands it, still takes any token.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import AsyncIterator, Iterator
from types import ModuleType
from typing import Any

import anyio
import pytest

from stageware import (
    Agent,
    ExecuteToolStage,
    InvokeModelStage,
    MiddlewareRegistry,
    Phase,
    ScriptedModel,
)
from stageware_codegen.cli import main

from .conftest import DATA, import_package


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ModuleType, ModuleType]]:
    """``my_stages`` (stageware's exported schema) and ``translate_api``, generated once."""
    root = tmp_path_factory.mktemp("foreign")
    shutil.copy(DATA / "translate.yaml", root / "translate.yaml")
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.chdir(root)
        assert main(["schema", "export", "base"]) == 0
        for schema, package in [
            ("base/stages.yaml", "my_stages"),
            ("translate.yaml", "translate_api"),
        ]:
            assert main(["generate", "--schema", schema, "--output", f"pkg/{package}"]) == 0
        yield (
            import_package(root / "pkg" / "my_stages", monkeypatch),
            import_package(root / "pkg" / "translate_api", monkeypatch),
        )


def test_a_same_named_token_of_another_package_is_refused_naming_both(
    packages: tuple[ModuleType, ModuleType],
) -> None:
    my_stages, _ = packages
    agent = Agent(ScriptedModel(["done"]))
    seen: list[str] = []

    def brief(context: Any) -> Any:
        seen.append("brief")
        return context

    assert my_stages.InvokeModelStage is not InvokeModelStage
    with pytest.raises(TypeError) as raised:
        agent.add_middleware(my_stages.InvokeModelStage.Input, brief)

    assert str(raised.value) == (
        "add_middleware(InvokeModelStage.Input, "
        "test_a_same_named_token_of_another_package_is_refused_naming_both.<locals>.brief): "
        "this InvokeModelStage is the one of package 'my_stages', not the one of 'stageware' "
        "that this host runs, so the handler would never run; register it on "
        "InvokeModelStage imported from stageware"
    )
    # Nothing was registered: the agent runs as if the call had not been made.
    assert agent("hi").text == "done"
    assert seen == []


@pytest.mark.parametrize("phase", ["Input", "Wrap", "Output", None])
def test_every_phase_of_the_other_packages_tokens_is_refused(
    packages: tuple[ModuleType, ModuleType], phase: str | None
) -> None:
    my_stages, _ = packages
    agent = Agent(ScriptedModel(["done"]))

    async def wrap(context: Any, next_fn: Any) -> AsyncIterator[Any]:
        async for event in next_fn(context):
            yield event

    for name in ("AgentStreamStage", "InvokeModelStage", "ExecuteToolStage"):
        stage = getattr(my_stages, name)
        token = stage if phase is None else getattr(stage, phase)
        handler = wrap if phase in ("Wrap", None) else (lambda value: value)
        with pytest.raises(TypeError, match=re.escape(f"this {name} is the one of package")):
            agent.add_middleware(token, handler)


def test_a_stage_the_agent_does_not_run_is_refused_naming_those_it_runs(
    packages: tuple[ModuleType, ModuleType],
) -> None:
    _, translate_api = packages
    agent = Agent(ScriptedModel(["done"]))

    with pytest.raises(TypeError) as raised:
        agent.add_middleware(translate_api.TranslateStage.Input, lambda c: c)

    message = str(raised.value)
    assert message.startswith("add_middleware(TranslateStage.Input, ")
    assert message.endswith(
        ": TranslateStage (package 'translate_api') is not a stage this host runs, so the "
        "handler would never run; it runs AgentStreamStage (package 'stageware'), "
        "InvokeModelStage (package 'stageware'), ExecuteToolStage (package 'stageware')"
    )


def test_stagewares_own_token_still_registers_and_runs() -> None:
    agent = Agent(ScriptedModel(["done"]))
    seen: list[str] = []

    def brief(context: Any) -> Any:
        seen.append("brief")
        return context

    agent.add_middleware(InvokeModelStage.Input, brief)

    assert agent("hi").text == "done"
    assert seen == ["brief"]


def test_a_plain_registry_takes_and_runs_any_packages_token(
    packages: tuple[ModuleType, ModuleType],
) -> None:
    _, translate_api = packages
    registry = MiddlewareRegistry()
    registry.add_middleware(
        translate_api.TranslateStage.Input, lambda c: c.replace(text=c.text.upper())
    )
    context = translate_api.TranslateContext.from_host(request={"id": "r1"}, text="hello")

    async def terminal(context: Any) -> AsyncIterator[Any]:
        yield translate_api.Translated(context.text)

    async def run() -> list[Any]:
        return [e async for e in registry.invoke(translate_api.TranslateStage, context, terminal)]

    assert anyio.run(run) == [translate_api.Translated("HELLO")]


def test_a_registry_given_its_stages_refuses_others() -> None:
    registry = MiddlewareRegistry(stages=[InvokeModelStage])

    registry.add_middleware(InvokeModelStage.Input, lambda c: c)
    with pytest.raises(TypeError, match=re.escape("ExecuteToolStage (package 'stageware') is not")):
        registry.add_middleware(ExecuteToolStage.Input, lambda c: c)

    assert len(registry.handlers(InvokeModelStage)[Phase.INPUT]) == 1
    assert registry.handlers(ExecuteToolStage)[Phase.INPUT] == ()
