"""Every optional module names its extra, and how to install it, when the extra is missing.

stageware is not on PyPI: a hint of ``pip install 'stageware[x]'`` would fail there, or
install a stranger's package of that name. Each module is imported in a fresh interpreter
with the extra's package blocked, as on a machine without the extra.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from stageware._extras import needs_extra

# (public module, a package of its extra, the extra)
_OPTIONAL = [
    ("stageware.cedar", "cedarpy", "cedar"),
    ("stageware.console", "starlette", "console"),
    ("stageware.postgres", "psycopg", "postgres"),
    ("stageware.mcp", "mcp", "mcp"),
    ("stageware.openai", "openai", "openai"),
    ("stageware.anthropic", "anthropic", "anthropic"),
    ("stageware.bedrock", "boto3", "bedrock"),
    ("stageware.dbos", "dbos", "dbos"),
    ("stageware.conformance", "hypothesis", "testing"),
]


@pytest.mark.parametrize(("module", "package", "extra"), _OPTIONAL)
def test_a_missing_extra_is_named_with_how_to_install_it(
    module: str, package: str, extra: str
) -> None:
    code = f"import sys; sys.modules[{package!r}] = None; import {module}"
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )

    assert completed.returncode == 1
    last = completed.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ImportError: {module} needs ")
    assert last.endswith(needs_extra(extra))


def test_the_hint_installs_from_a_clone_or_a_git_url_never_from_pypi() -> None:
    assert needs_extra("console") == (
        "the `console` extra: pip install -e '.[console]' in a clone, "
        "or pip install 'stageware[console] @ git+https://<your-git-host>/stageware.git'"
    )
