"""Policy files: a policy that does not parse or validate is named by file, line, column."""

from __future__ import annotations

from pathlib import Path

import pytest

from stageware.cedar import CedarPolicyError, cedar_policy
from stageware.policy import HookPoint, Principal, RouteEvent, SpecError, read_policy

from .cedar_helpers import env, settings


def _write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_parse_error_names_its_file_and_the_policy_where_it_starts(tmp_path: Path) -> None:
    good = _write(tmp_path, "good.cedar", "permit(principal, action, resource);\n")
    bad = _write(
        tmp_path,
        "bad.cedar",
        "// a comment; with a semicolon\n"
        'permit(principal, action == Action::"tool:lookup", resource);\n'
        "\n"
        '   @id("broken")\n'
        '   forbid(principal, action, resource) when { context.text like "a;b" && };\n',
    )
    with pytest.raises(CedarPolicyError) as raised:
        cedar_policy.build(settings(policy_text=None, policies=[good, bad]))
    [problem] = raised.value.problems
    assert problem.startswith(f"{bad}:4:4: policy 2 in the file: ")
    assert "unexpected token" in problem


def test_validation_errors_name_the_file_line_and_policy_across_files(tmp_path: Path) -> None:
    first = _write(
        tmp_path,
        "tools.cedar",
        'permit(principal, action == Action::"tool:lookup", resource);\n'
        "\n"
        '@id("typo")\n'
        'permit(principal, action == Action::"tool:refnd", resource);\n',
    )
    second = _write(
        tmp_path,
        "input.cedar",
        'forbid(principal, action == Action::"tool:refund", resource)\n'
        "  when { context.input.amont > 1 };\n",
    )
    with pytest.raises(CedarPolicyError) as raised:
        cedar_policy.build(settings(policy_text=None, policies=[first, second]))
    problems = raised.value.problems
    assert (
        f"{first}:3:1: 'typo': unrecognized action `Action::\"tool:refnd\"` "
        '(did you mean Action::"tool:refund"?)'
    ) in problems
    assert any(p.startswith(f"{second}:1:1: policy2: ") and "input.amont" in p for p in problems), (
        problems
    )
    assert str(raised.value).startswith(f"{len(problems)} Cedar policy problems:\n  ")


def test_a_missing_semicolon_stays_in_its_file(tmp_path: Path) -> None:
    cut = _write(tmp_path, "cut.cedar", "permit(principal, action, resource)\n")
    after = _write(tmp_path, "after.cedar", "permit(principal, action, resource);\n")
    with pytest.raises(CedarPolicyError) as raised:
        cedar_policy.build(settings(policy_text=None, policies=[cut, after]))
    [problem] = raised.value.problems
    assert problem.startswith(f"{cut}:1:1: policy 1 in the file: ")


def test_an_unreadable_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(CedarPolicyError, match=r"nowhere\.cedar: cannot be read"):
        cedar_policy.build(settings(policy_text=None, policies=[tmp_path / "nowhere.cedar"]))


@pytest.mark.anyio
async def test_a_spec_lists_cedar_like_any_middleware(tmp_path: Path) -> None:
    policies = _write(
        tmp_path,
        "models.cedar",
        'permit(principal, action == Action::"route.select", resource == Model::"small");\n',
    )
    spec = _write(
        tmp_path,
        "policy.yaml",
        "version: 1\n"
        "middleware:\n"
        "  - use: stageware.cedar:cedar_policy\n"
        "    hooks: [route.select]\n"
        "    timeout: 500ms\n"
        "    settings:\n"
        f"      policies: [{policies}]\n"
        "      tools: tests.cedar.test_cedar_schema:TOOLS\n",
    )
    [entry] = read_policy(spec).entries
    assert entry.middleware is cedar_policy
    assert entry.hooks == (HookPoint.ROUTE_SELECT,)
    handler = entry.middleware.build(entry.settings)
    event = RouteEvent(run_id="r", model_id="large", tool_names=[])
    assert await handler(event, env(HookPoint.ROUTE_SELECT, Principal("dana"))) is not None
    small = RouteEvent(run_id="r", model_id="small", tool_names=[])
    assert await handler(small, env(HookPoint.ROUTE_SELECT, Principal("dana"))) is None

    broken = _write(tmp_path, "broken.yaml", spec.read_text().replace("policies:", "policys:"))
    with pytest.raises(SpecError, match="policys"):
        read_policy(broken)


@pytest.mark.anyio
async def test_a_specs_relative_policy_paths_are_read_from_the_specs_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config"
    (config / "policies").mkdir(parents=True)
    _write(
        config / "policies",
        "models.cedar",
        'permit(principal, action == Action::"route.select", resource == Model::"small");\n',
    )
    spec = _write(
        config,
        "policy.yaml",
        "version: 1\n"
        "middleware:\n"
        "  - use: stageware.cedar:cedar_policy\n"
        "    hooks: [route.select]\n"
        "    settings:\n"
        "      policies: [policies/models.cedar]\n",
    )
    # The application runs elsewhere, where the relative path names nothing.
    elsewhere = tmp_path / "app"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)

    [entry] = read_policy(spec).entries
    assert entry.settings_dir == config
    small = RouteEvent(run_id="r", model_id="small", tool_names=[])
    large = RouteEvent(run_id="r", model_id="large", tool_names=[])
    assert await entry.handler(small, env(HookPoint.ROUTE_SELECT, Principal("dana"))) is None
    assert await entry.handler(large, env(HookPoint.ROUTE_SELECT, Principal("dana"))) is not None
    # Named relative to where the spec was given: a spec given as a relative path too.
    monkeypatch.chdir(tmp_path)
    [relative] = read_policy("config/policy.yaml").entries
    assert relative.settings_dir == Path("config")

    # Settings given in code keep reading from the working directory.
    with pytest.raises(CedarPolicyError, match=r"policies/models\.cedar: cannot be read"):
        cedar_policy.build(settings(policy_text=None, policies=[Path("policies/models.cedar")]))
    monkeypatch.chdir(config)
    in_code = cedar_policy.build(
        settings(policy_text=None, policies=[Path("policies/models.cedar")])
    )
    assert await in_code(small, env(HookPoint.ROUTE_SELECT, Principal("dana"))) is None

    # A missing file in a spec is named by where it was looked for.
    gone = _write(config, "gone.yaml", spec.read_text().replace("models.cedar", "gone.cedar"))
    monkeypatch.chdir(elsewhere)
    with pytest.raises(SpecError, match=r"policies/gone\.cedar: cannot be read"):
        read_policy(gone)
