"""Policy plugins installed for real, and spec files written for a test.

The plugin packages under ``tests/policy/plugins/`` are built and installed with pip,
from this environment and without the network (``--no-build-isolation --no-index``: their
build backend, hatchling, is a dev dependency), into a temporary directory with
``--target``, once per test session. A test that wants them asks for ``plugins``, which
puts that directory on ``sys.path`` for the test; ``importlib.metadata`` then finds the
distributions and their entry points as it finds any installed distribution. Nothing in
``importlib.metadata`` is patched. ``acme-clash``, which claims names ``acme-policies``
has, is installed into a directory of its own, on the path only where a test asks for it.
``test_check_command`` also installs ``acme-policies`` into a fresh virtual environment
and runs ``stageware policy check`` there, in a process of its own.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

PLUGINS = Path(__file__).resolve().parents[1] / "plugins"
PLUGIN_MODULES = ("acme_policies", "odd_policies", "acme_clash")


def pip_install(*packages: Path, target: Path | None = None, python: Path | None = None) -> None:
    """Build and install *packages* offline: into *target*, or into *python*'s environment."""
    into = ["--python", str(python)] if python is not None else []
    where = ["--target", str(target)] if target is not None else []
    offline = ["--no-deps", "--no-build-isolation", "--no-index", "--quiet"]
    pip = [sys.executable, "-m", "pip", *into, "install"]
    command = [*pip, *offline, *where, *map(str, packages)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="session")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding acme-policies and odd-policies, installed."""
    target = tmp_path_factory.mktemp("plugin-site")
    pip_install(PLUGINS / "acme_policies", PLUGINS / "odd_policies", target=target)
    return target


@pytest.fixture(scope="session")
def clash_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding acme-clash, installed."""
    target = tmp_path_factory.mktemp("clash-site")
    pip_install(PLUGINS / "acme_clash", target=target)
    return target


def _forget_plugin_modules() -> None:
    for name in list(sys.modules):
        if name.split(".")[0] in PLUGIN_MODULES:
            del sys.modules[name]


@pytest.fixture
def plugins(plugin_site: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The installed plugins, on ``sys.path`` for this test."""
    monkeypatch.syspath_prepend(str(plugin_site))
    yield plugin_site
    _forget_plugin_modules()


@pytest.fixture
def clashing(clash_site: Path, plugins: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """acme-clash too, on ``sys.path`` for this test."""
    monkeypatch.syspath_prepend(str(clash_site))
    return clash_site


WriteFile = Callable[[str, str], Path]


@pytest.fixture
def write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[WriteFile]:
    """``write(name, text)`` writes a file into a directory of this test's own and returns
    its path relative to it: the directory is the working directory (so messages name the
    file as ``policy.yaml``) and on ``sys.path`` (for the modules a spec names)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)

    def write_file(name: str, text: str) -> Path:
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return Path(name)

    yield write_file
    for name in set(sys.modules) - before:
        module = sys.modules[name]
        if str(getattr(module, "__file__", "") or "").startswith(str(tmp_path)):
            del sys.modules[name]
