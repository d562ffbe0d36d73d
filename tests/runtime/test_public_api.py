"""The package's public surface: everything public is exported once, from ``stageware``."""

from __future__ import annotations

import stageware


def test_every_public_name_is_in_all() -> None:
    public = {name for name in vars(stageware) if not name.startswith("_")}
    submodules = {"hooks"}  # Namespaces, imported as modules rather than re-exported names.

    assert public - submodules - set(stageware.__all__) == set()


def test_everything_in_all_exists() -> None:
    missing = [name for name in stageware.__all__ if not hasattr(stageware, name)]

    assert missing == []


def test_all_has_no_duplicates() -> None:
    assert len(stageware.__all__) == len(set(stageware.__all__))
