"""A write replaces the whole package or nothing, also when it fails or the process dies.

The new modules are staged inside the output directory, a journal records the renames
and removals, then they are applied. Failures are injected at every rename and every
flush; a dead process is simulated by an exception no handler catches, which leaves the
files exactly as a kill would, and the next run must finish the write.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Generator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from stageware_codegen import OutputError, generate
from stageware_codegen.write.journal import JOURNAL

from .conftest import Cli, Project, write_package

STAGE_DOC = "      Wraps one call to the model. Middleware"
CHANGED = {"contexts.py", "stages.py"}
REMOVED = {"policy_decorator.py", "policy_events.py", "policy_points.py"}


class Killed(BaseException):
    """Stands for the process being killed: nothing in the generator handles it."""


def _edit_many(project: Project) -> None:
    """A schema edit that changes two modules and makes two stale."""
    project.edit(STAGE_DOC, "      Wraps one model call. Middleware")
    text = project.schema.read_text(encoding="utf-8")
    project.schema.write_text(text[: text.index("\nhooks:")] + "\n", encoding="utf-8")


def _leftovers(project: Project) -> list[str]:
    """Anything a write may leave behind by mistake, in or beside the output directory."""
    found = [
        path.relative_to(project.root).as_posix()
        for path in project.root.rglob("*")
        if path.name.startswith(".stageware") or path.name.endswith((".tmp", ".old"))
    ]
    return sorted(found)


@contextmanager
def failing(name: str, number: int, error: BaseException) -> Generator[list[int]]:
    """Make the *number*-th call of ``os.<name>`` in the block raise *error*.

    Yields the number of calls so far, in a list. Its own monkeypatch, so that undoing
    it leaves the ``project`` fixture's working directory alone.
    """
    original: Callable[..., object] = getattr(os, name)
    calls = [0]

    def fail(*args: object, **kwargs: object) -> object:
        calls[0] += 1
        if calls[0] == number:
            raise error
        return original(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, name, fail)
        yield calls


@contextmanager
def patched(name: str, replacement: Callable[..., object]) -> Generator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, name, replacement)
        yield


def _count_calls(cli: Cli, *names: str) -> dict[str, int]:
    """How often a successful ``generate`` calls each ``os.<name>``."""
    with ExitStack() as stack:
        calls = {name: stack.enter_context(failing(name, 0, AssertionError())) for name in names}
        assert cli("generate").code == 0
    return {name: count[0] for name, count in calls.items()}


def test_generate_stages_inside_the_output_and_leaves_nothing(project: Project, cli: Cli) -> None:
    siblings = sorted(path.name for path in project.root.iterdir())
    _edit_many(project)

    result = cli("generate")

    assert result.code == 0, result.err
    assert result.out.strip() == "out: 2 written, 4 unchanged, 3 removed"
    assert _leftovers(project) == []
    assert sorted(path.name for path in project.root.iterdir()) == siblings
    assert cli("check").code == 0


@pytest.mark.parametrize("call", range(1, 6))
def test_a_rename_that_fails_puts_every_old_module_back(
    project: Project, cli: Cli, call: int
) -> None:
    _edit_many(project)
    before = project.snapshot()

    with failing("replace", call, OSError(errno.EIO, "injected")):
        result = cli("generate")

    assert _leftovers(project) == []
    if call == 5:  # the cache's rename, after the transaction: it is best effort
        assert result.code == 0, result.err
        assert cli("check").code == 0
        return
    assert result.code == 2
    assert "injected" in result.err
    assert "nothing was changed" in result.err
    assert project.snapshot() == before


@pytest.mark.parametrize("call", range(1, 9))
def test_a_flush_that_fails_leaves_the_old_or_the_new_package(
    project: Project, cli: Cli, call: int
) -> None:
    _edit_many(project)
    before = project.snapshot()

    with failing("fsync", call, OSError(errno.EIO, "injected")):
        result = cli("generate")

    assert _leftovers(project) == []
    if call == 8:  # after the journal is gone: finishing again would change nothing
        assert result.code == 0, result.err
        assert cli("check").code == 0
        return
    assert result.code == 2
    assert "nothing was changed" in result.err
    assert project.snapshot() == before


def test_the_failures_above_reach_every_rename_and_flush(project: Project, cli: Cli) -> None:
    # Renames: the journal, two modules moved in, __init__.py put back last, then the
    # cache. Flushes: three staged modules, the staging directory, the journal, the
    # output directory before and after the renames, and after the journal goes.
    _edit_many(project)
    assert _count_calls(cli, "replace", "fsync") == {"replace": 5, "fsync": 8}


@pytest.mark.parametrize("call", [1, 2, 3, 4])
def test_a_write_killed_midway_is_finished_by_the_next_check(
    project: Project, cli: Cli, call: int
) -> None:
    _edit_many(project)
    before = project.snapshot()

    with failing("replace", call, Killed()), pytest.raises(Killed):
        cli("generate")

    if call == 1:
        # Killed before the journal existed: the package was never touched.
        assert project.snapshot() == before
        result = cli("check")
        assert result.code == 1
        assert "interrupted" not in result.err
    else:
        # Killed while applying: the package is half written but cannot be imported
        # as one, since __init__.py is out until the end.
        assert (project.output / JOURNAL).is_file()
        assert not (project.output / "__init__.py").exists()
        result = cli("check")
        assert result.code == 0, result.out + result.err
        assert "out: finished a write that was interrupted" in result.err
        assert all(name in result.err for name in CHANGED | REMOVED)
        assert not REMOVED & {path.name for path in project.output.iterdir()}
    assert _leftovers(project) == []


def test_a_staging_directory_left_by_a_dead_process_is_removed(project: Project, cli: Cli) -> None:
    before = project.snapshot()
    abandoned = project.output / ".stageware-staging-abc" / "_stageware_candidate"
    abandoned.mkdir(parents=True)
    (abandoned / "contexts.py").write_text("half", encoding="utf-8")

    result = cli("check")

    assert result.code == 0, result.out + result.err
    assert "interrupted" not in result.err
    assert _leftovers(project) == []
    assert project.snapshot() == before


def test_a_write_killed_midway_is_finished_by_the_next_generate(project: Project, cli: Cli) -> None:
    _edit_many(project)
    with failing("replace", 3, Killed()), pytest.raises(Killed):
        cli("generate")

    result = cli("generate")

    assert result.code == 0, result.err
    assert "finished a write that was interrupted" in result.err
    assert result.out.strip() == "out: 0 written, 6 unchanged, 0 removed"
    assert _leftovers(project) == []
    assert cli("check").code == 0


def test_finishing_after_the_last_rename_changes_nothing(project: Project, cli: Cli) -> None:
    # Killed after __init__.py was put back, before the journal was removed: finishing
    # again must not take the new __init__.py out.
    _edit_many(project)
    unlink = os.unlink

    def killed_at_the_journal(path: str, *args: object, **kwargs: object) -> None:
        if str(path).endswith(JOURNAL):
            raise Killed
        unlink(path, *args, **kwargs)  # type: ignore[arg-type]

    with patched("unlink", killed_at_the_journal), pytest.raises(Killed):
        cli("generate")
    assert (project.output / JOURNAL).is_file()
    after = project.snapshot()

    result = cli("check")

    assert result.code == 0, result.out + result.err
    assert "finished a write that was interrupted" in result.err
    assert {name: text for name, text in project.snapshot().items() if "/" not in name} == {
        name: text for name, text in after.items() if "/" not in name and name != JOURNAL
    }
    assert _leftovers(project) == []


def test_a_journal_that_cannot_be_read_stops_the_run(project: Project, cli: Cli) -> None:
    (project.output / JOURNAL).write_text("{not json", encoding="utf-8")

    for command in ("generate", "check"):
        result = cli(command)
        assert result.code == 2
        assert "cannot finish the interrupted write" in result.err
        assert "restore the directory from version control" in result.err


def test_a_journal_cannot_reach_outside_the_output(project: Project, cli: Cli) -> None:
    (project.output / JOURNAL).write_text(
        '{"staging": ".stageware-staging-x", "write": [], '
        '"remove": ["../pyproject.toml"], "offline": false}',
        encoding="utf-8",
    )

    assert cli("generate").code == 2
    assert (project.root / "pyproject.toml").is_file()


def test_the_output_directory_is_never_renamed(project: Project, cli: Cli) -> None:
    # A mount point cannot be renamed, nor can files move across it: here renaming the
    # output directory, or anything into or out of it, fails as it would there.
    output = project.output.resolve()

    def guarded(original: Callable[..., object]) -> Callable[..., object]:
        def rename(source: str, target: str, *args: object, **kwargs: object) -> object:
            paths = [Path(source).resolve(), Path(target).resolve()]
            if output in paths or any(output not in path.parents for path in paths):
                raise OSError(errno.EXDEV, "cross-device link", source)
            return original(source, target, *args, **kwargs)

        return rename

    _edit_many(project)
    with patched("replace", guarded(os.replace)), patched("rename", guarded(os.rename)):
        result = cli("generate")

    assert result.code == 0, result.err
    assert cli("check").code == 0
    assert _leftovers(project) == []


def test_a_new_output_directory_is_removed_when_the_write_fails(project: Project) -> None:
    with (
        failing("replace", 2, OSError(errno.EIO, "injected")),
        pytest.raises(OutputError, match="nothing was changed"),
    ):
        generate(project.schema, project.root / "fresh" / "api")

    assert not (project.root / "fresh").exists()


def test_removing_a_stale_module_is_part_of_the_transaction(project: Project) -> None:
    files = {path.name: path.read_text(encoding="utf-8") for path in project.output.glob("*.py")}
    (project.output / "old.py").write_text(files["results.py"], encoding="utf-8")
    files["results.py"] += "# changed\n"
    before = project.snapshot()
    unlink = os.unlink

    def refused_for_old(path: str, *args: object, **kwargs: object) -> None:
        if Path(path).name == "old.py":
            raise OSError(errno.EACCES, "injected", path)
        unlink(path, *args, **kwargs)  # type: ignore[arg-type]

    with (
        patched("unlink", refused_for_old),
        pytest.raises(OutputError, match="nothing was changed"),
    ):
        write_package(project.output, files)

    assert project.snapshot() == before
    assert _leftovers(project) == []
