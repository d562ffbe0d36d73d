"""The package's public surface: everything public is exported once, from ``stageware``."""

from __future__ import annotations

import pydantic

import stageware

# Submodules that need an extra: importing one binds it on the package, but they stay out
# of __all__ so that `from stageware import *` works without the extra.
OPTIONAL_SUBMODULES = {"openai"}


def test_every_public_name_is_in_all() -> None:
    public = {name for name in vars(stageware) if not name.startswith("_")}
    assert public - set(stageware.__all__) - OPTIONAL_SUBMODULES == set()


def test_optional_submodules_are_not_star_exported() -> None:
    import stageware.openai  # binds the submodule on the package

    assert OPTIONAL_SUBMODULES.isdisjoint(stageware.__all__)


def test_everything_in_all_exists() -> None:
    missing = [name for name in stageware.__all__ if not hasattr(stageware, name)]

    assert missing == []


def test_all_has_no_duplicates() -> None:
    assert len(stageware.__all__) == len(set(stageware.__all__))


def test_every_hook_point_event_is_exported_from_the_hooks_namespace() -> None:
    for point, spec in stageware.hooks.HOOK_POINTS.items():
        assert getattr(stageware.hooks, spec.event.__name__) is spec.event, point
        assert spec.event.__name__ in stageware.hooks.__all__


def test_the_hook_event_of_a_stage_event_name_is_a_different_type() -> None:
    hook_event: object = stageware.hooks.ToolResultEvent

    assert hook_event is not stageware.ToolResultEvent
    assert issubclass(stageware.hooks.ToolResultEvent, pydantic.BaseModel)
