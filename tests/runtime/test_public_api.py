"""The package's public surface: everything public is exported once, from ``stageware``."""

from __future__ import annotations

import pydantic
import pytest

import stageware
import stageware.policy
import stageware.runtime

# Public submodules: importing one binds it on the package, but they stay out of __all__,
# so that `from stageware import *` works without the extras the model adapters, MCP,
# `postgres`, `dbos`, `cedar`, `console` and `conformance` (`testing`) need.
OPTIONAL_SUBMODULES = {
    "anthropic",
    "bedrock",
    "cedar",
    "conformance",
    "console",
    "dbos",
    "mcp",
    "openai",
    "postgres",
}
SUBMODULES = {*OPTIONAL_SUBMODULES, "middleware", "policy", "runtime"}


def test_every_public_name_is_in_all() -> None:
    for name in stageware.__all__:
        getattr(stageware, name)  # load everything lazily exported
    public = {name for name in vars(stageware) if not name.startswith("_")}
    assert public - set(stageware.__all__) - SUBMODULES == set()


def test_optional_submodules_are_not_star_exported() -> None:
    import stageware.anthropic
    import stageware.bedrock
    import stageware.cedar
    import stageware.conformance  # binds the submodules on the package
    import stageware.console
    import stageware.dbos
    import stageware.mcp
    import stageware.openai
    import stageware.postgres

    assert OPTIONAL_SUBMODULES.isdisjoint(stageware.__all__)


def test_everything_in_all_exists() -> None:
    missing = [name for name in stageware.__all__ if not hasattr(stageware, name)]

    assert missing == []


def test_all_has_no_duplicates() -> None:
    assert len(stageware.__all__) == len(set(stageware.__all__))


def test_every_hook_point_event_is_exported_from_the_policy_namespace() -> None:
    for point, spec in stageware.policy.HOOK_POINTS.items():
        assert getattr(stageware.policy, spec.event.__name__) is spec.event, point
        assert spec.event.__name__ in stageware.policy.__all__


def test_the_hook_event_of_a_stage_event_name_is_a_different_type() -> None:
    hook_event: object = stageware.policy.ToolResultEvent

    assert hook_event is not stageware.ToolResultEvent
    assert issubclass(stageware.policy.ToolResultEvent, pydantic.BaseModel)


def test_the_policy_surface_stays_out_of_the_top_level() -> None:
    assert {"HookPoint", "Band", "Direction", "HOOK_POINTS"}.isdisjoint(stageware.__all__)
    assert {"HookPoint", "Band", "Direction", "HOOK_POINTS"} <= set(stageware.policy.__all__)


def test_the_public_runtime_module_exports_the_runtime() -> None:
    assert stageware.runtime.MiddlewareRegistry is stageware.MiddlewareRegistry
    assert stageware.runtime.MiddlewareHost is stageware.MiddlewareHost
    missing = [name for name in stageware.runtime.__all__ if not hasattr(stageware.runtime, name)]
    assert missing == []


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Agnet'"):
        stageware.Agnet  # noqa: B018 - the attribute access is the test


def test_version_is_the_installed_version() -> None:
    from importlib.metadata import version

    assert stageware.__version__ == version("stageware")
