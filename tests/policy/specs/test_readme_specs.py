"""The policies guide's "Policy specs and plugins" block says what the code does.

Its two YAML files are checked with ``stageware policy check`` against the acme-policies
plugin (installed for real, see ``conftest``), and the command's output must be the one
the guide shows; so must the error it quotes, and the entry point of the plugin. Its
Python line loads both files into an agent.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import stageware.policy
from stageware import Agent, ScriptedModel, tool
from stageware._policy._spec._source import MAX_SPEC_BYTES
from stageware.policy import PolicyEngine, load_policy
from stageware_codegen.cli import main
from tests.readme import find_section, page_of

from .conftest import PLUGINS, WriteFile

HEADING = "### Policy specs and plugins\n"


def _block() -> str:
    text = find_section(HEADING).text
    start = text.index("<!-- policy specs: begin -->")
    return text[start : text.index("<!-- policy specs: end -->", start)]


def _fenced(kind: str) -> list[str]:
    return re.findall(rf"^ *```{kind}\n(.*?)^ *```", _block(), re.MULTILINE | re.DOTALL)


@pytest.fixture
def readme_files(write: WriteFile, plugins: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(sys, "path", list(sys.path))
    policy, org = _fenced("yaml")
    write("policy.yaml", policy)
    write("org.yaml", org)
    return policy


def test_the_check_output_is_the_one_shown(
    readme_files: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["policy", "check", "policy.yaml", "--baseline", "org.yaml"])

    out, err = capsys.readouterr()
    assert (status, err) == (0, "")
    assert out == _fenced("text")[0]


def test_the_quoted_error_is_the_one_a_bad_setting_gets(
    readme_files: str, write: WriteFile, capsys: pytest.CaptureFixture[str]
) -> None:
    quoted = re.search(r"`(policy\.yaml:\d+: .*?)` for `limit: lots`", _block(), re.DOTALL)
    assert quoted is not None
    write("policy.yaml", readme_files.replace("limit: 300", "limit: lots"))

    assert main(["policy", "check", "policy.yaml", "--baseline", "org.yaml"]) == 2
    assert capsys.readouterr().err == " ".join(quoted[1].split()) + "\n"


def test_the_entry_point_is_the_test_plugins() -> None:
    (entry_point,) = _fenced("toml")
    pyproject = (PLUGINS / "acme_policies" / "pyproject.toml").read_text(encoding="utf-8")

    assert " ".join(entry_point.split()) in " ".join(pyproject.split())


def test_the_stated_size_bound_is_the_one_enforced() -> None:
    stated = re.search(r"a regular file of at most (\d+) KiB", " ".join(_block().split()))

    assert stated is not None
    assert int(stated[1]) * 1024 == MAX_SPEC_BYTES


def test_the_python_line_builds_the_agent_under_both_files(
    readme_files: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (code,) = _fenced("python")

    @tool
    def refund(amount: int) -> str:
        """Refund an amount."""
        return "refunded"

    loaded: list[PolicyEngine] = []

    def load(path: str, *, baseline: str) -> PolicyEngine:
        loaded.append(load_policy(path, baseline=baseline))
        return loaded[-1]

    # The block imports load_policy: it gets this one, which keeps the engine it built.
    monkeypatch.setattr(stageware.policy, "load_policy", load)
    namespace: dict[str, object] = {"model": ScriptedModel(["Done."]), "refund": refund}
    exec(compile(code, page_of(HEADING), "exec"), namespace)

    assert isinstance(namespace["agent"], Agent)
    [engine] = loaded
    assert [(entry.middleware.name, entry.baseline) for entry in engine.entries] == [
        ("acme.no_weekend_refunds", True),
        ("acme.refund_limit", False),
        ("acme.audit_tools", False),
    ]
