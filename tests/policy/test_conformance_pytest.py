"""The conformance suite as a plugin author runs it: through pytest.

The inner pytest sessions run in this process (``pytester``), with the suite's pytest
plugin where they ask for it (``-p stageware.conformance.plugin``). The plugin they check
is a real installed distribution: a package and its ``.dist-info`` (with an entry point in the
``stageware.middleware`` group) in a directory put on ``sys.path``, found by
``importlib.metadata`` as any installed plugin is.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import types
from importlib import metadata
from pathlib import Path

import pytest

from stageware._policy.conformance._cases import cases_of

# Imported before any inner session, which would otherwise import it (and hypothesis)
# itself: pytester unloads what an inner session imports, and hypothesis takes seconds to
# import again under assertion rewriting.
from stageware.conformance import conformance_test
from tests.policy.specs.conftest import plugin_site
from tests.readme import readme_blocks

pytest_plugins = ["pytester"]

# acme-policies and odd-policies, built from tests/policy/plugins/ and installed with pip
# into a directory of their own, once per session (the policy-spec tests' fixture).
__all__ = ["plugin_site"]

_PLUGIN = ("-p", "no:cacheprovider", "-p", "stageware.conformance.plugin")

_POLICIES = """
from typing import Any

from stageware.policy import Block, Continue, Retry, middleware


@middleware(hooks=["tool.before", "tool.after"], fail_mode="closed", timeout="1s")
async def good(event: Any, env: Any) -> Any:
    return Block("no wires") if event.tool_name == "wire_money" else Continue()


@middleware(hooks=["run.start", "tool.after"], fail_mode="closed")
async def retries(event: Any, env: Any) -> Any:
    return Retry("again")
"""


def _install_plugin(pytester: pytest.Pytester, package: str, namespace: str) -> None:
    """Install a distribution holding *package*, contributing it under *namespace*."""
    site = pytester.mkdir(f"site_{package}")
    (site / package).mkdir()
    (site / package / "__init__.py").write_text(_POLICIES, encoding="utf-8")
    info = site / f"{package}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {package}\nVersion: 1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        f"[stageware.middleware]\n{namespace} = {package}\n", encoding="utf-8"
    )
    pytester.syspathinsert(site)


def test_conformance_test_makes_a_test_per_middleware_and_hook(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(policies=_POLICIES)
    pytester.makepyfile(
        test_policies="""
        import policies
        from stageware.conformance import conformance_test

        test_conformance = conformance_test(policies)
        """
    )

    result = pytester.runpytest("-v", "-p", "no:cacheprovider")

    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_conformance[[]good-tool.before[]] PASSED*",
            "*test_conformance[[]good-tool.after[]] PASSED*",
            "*test_conformance[[]retries-run.start[]] FAILED*",
            "*test_conformance[[]retries-tool.after[]] PASSED*",
            "E * 1 conformance failure:",
            "* - retries at run.start: returned Retry, which run.start does not allow *",
            '*     event: {"hook": "run.start", *}',
        ]
    )


def test_conformance_test_feeds_given_events_to_their_hook(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_given="""
        from stageware.conformance import conformance_test
        from stageware.policy import Block, ToolCallEvent, middleware

        @middleware(hooks=["tool.before", "tool.after"], fail_mode="closed")
        async def refund_days(event, env):
            if event.tool_name == "refund" and event.input["day"] == "sunday":
                return Block("no refunds on a Sunday")
            return None

        listed = ToolCallEvent(run_id="r1", tool_name="refund", tool_use_id="t1", input=[])
        test_refunds = conformance_test(refund_days, events=[listed])
        """
    )

    result = pytester.runpytest("-v", "-p", "no:cacheprovider")

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_refunds[[]refund_days-tool.before[]] FAILED*",
            "*test_refunds[[]refund_days-tool.after[]] PASSED*",
            "* - refund_days at tool.before: raised TypeError: list indices must be *",
            '*     event: {"hook": "tool.before", "run_id": "r1", "tool_name": "refund", *}',
        ]
    )


def test_conformance_test_takes_an_installed_plugins_namespace(
    pytester: pytest.Pytester,
) -> None:
    _install_plugin(pytester, "probe_one", "probe1")
    pytester.makepyfile(
        test_plugin="""
        from stageware.conformance import conformance_test

        test_probe = conformance_test("probe1", backends=["asyncio", "trio"])
        """
    )

    result = pytester.runpytest("-v", "-p", "no:cacheprovider")

    result.assert_outcomes(passed=6, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*test_probe[[]probe1.good-tool.before[]] PASSED*",
            "*test_probe[[]probe1.good-tool.before-trio[]] PASSED*",
            "*test_probe[[]probe1.retries-run.start-trio[]] FAILED*",
        ]
    )


def test_the_command_line_option_checks_an_installed_plugin(pytester: pytest.Pytester) -> None:
    _install_plugin(pytester, "probe_two", "probe2")

    result = pytester.runpytest("-v", *_PLUGIN, "--stageware-conformance=probe2")

    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*stageware-conformance[[]probe2.good-tool.before[]] PASSED*",
            "*stageware-conformance[[]probe2.retries-run.start[]] FAILED*",
            "1 conformance failure:",
            "- probe2.retries at run.start: returned Retry, which run.start does not allow *",
        ]
    )
    # The failure is the suite's report, not a traceback through the suite.
    assert "_suite.py" not in result.stdout.str()


def test_the_command_line_option_works_with_k_and_the_trio_backend(
    pytester: pytest.Pytester,
) -> None:
    _install_plugin(pytester, "probe_three", "probe3")

    result = pytester.runpytest(
        "-v",
        *_PLUGIN,
        "--stageware-conformance=probe3",
        "--stageware-conformance-backend=trio",
        "--stageware-conformance-examples=3",
        "-k",
        "good",
    )

    result.assert_outcomes(passed=2, deselected=2)
    result.stdout.fnmatch_lines(["*stageware-conformance[[]probe3.good-tool.after-trio[]] PASSED*"])


def test_an_unknown_namespace_is_a_usage_error(pytester: pytest.Pytester) -> None:
    _install_plugin(pytester, "probe_four", "probe4")

    result = pytester.runpytest(*_PLUGIN, "--stageware-conformance=probe_4")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --stageware-conformance: no installed plugin contributes middleware under "
            "'probe_4' (entry point group 'stageware.middleware'); installed namespaces: *probe4*"
        ]
    )


def test_a_bad_number_of_examples_is_a_usage_error(pytester: pytest.Pytester) -> None:
    _install_plugin(pytester, "probe_five", "probe5")

    result = pytester.runpytest(
        *_PLUGIN, "--stageware-conformance=probe5", "--stageware-conformance-examples=0"
    )

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--stageware-conformance: examples must be at least 1, got 0"])


def test_without_the_option_the_plugin_adds_no_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")

    result = pytester.runpytest(*_PLUGIN)

    result.assert_outcomes(passed=1)


def test_the_plugin_is_opt_in(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", "--stageware-conformance=acme")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unrecognized arguments: --stageware-conformance=acme*"])
    assert not [
        point
        for point in metadata.distribution("stageware").entry_points
        if point.group == "pytest11"
    ]


# The test plugin packages, installed for real.


def test_the_acme_plugin_passes(pytester: pytest.Pytester, plugin_site: Path) -> None:
    pytester.syspathinsert(plugin_site)

    result = pytester.runpytest(
        "-v",
        *_PLUGIN,
        "--stageware-conformance=acme",
        "--stageware-conformance-backend=asyncio",
        "--stageware-conformance-backend=trio",
    )

    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(
        [
            "*stageware-conformance[[]acme.no_weekend_refunds-tool.before[]] PASSED*",
            "*stageware-conformance[[]acme.refund_limit-tool.before-trio[]] PASSED*",
            "*stageware-conformance[[]acme.audit_tools-tool.after[]] PASSED*",
        ]
    )


def test_a_broken_plugin_is_a_usage_error_naming_it(
    pytester: pytest.Pytester, plugin_site: Path
) -> None:
    pytester.syspathinsert(plugin_site)

    result = pytester.runpytest(*_PLUGIN, "--stageware-conformance=broken")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --stageware-conformance: plugin entry point "
            "'broken = odd_policies.broken' of odd-policies *: cannot be loaded: *"
        ]
    )


# The demo's policies.


def test_the_demo_policies_pass(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_demo_policies="""
        from stageware._demo.policy import _middleware
        from stageware.conformance import conformance_test

        test_demo = conformance_test(_middleware, backends=["asyncio", "trio"])
        """
    )

    result = pytester.runpytest("-v", "-p", "no:cacheprovider")

    result.assert_outcomes(passed=16)
    result.stdout.fnmatch_lines(
        [
            "*test_demo[[]csat_survey-input.received-trio[]] PASSED*",
            "*test_demo[[]no_promises-model.response-trio[]] PASSED*",
            "*test_demo[[]redact_pii-input.received[]] PASSED*",
            "*test_demo[[]stream_guard-stream.chunk-trio[]] PASSED*",
        ]
    )


# What the policy layer and the suite import.


def _loaded_after(code: str) -> set[str]:
    probe = textwrap.dedent(
        f"""
        import sys
        {code}
        print(*sorted(sys.modules))
        """
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True
    )
    return set(completed.stdout.split())


def test_the_policy_layer_imports_neither_hypothesis_nor_pytest() -> None:
    loaded = _loaded_after("import stageware.policy")

    assert "stageware.policy" in loaded
    assert not {"hypothesis", "pytest", "_pytest"} & loaded
    assert not any(module.startswith("stageware._policy.conformance") for module in loaded)


def test_without_hypothesis_the_suite_names_the_extra(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "sys.modules['hypothesis'] = None\n"
        "try:\n"
        "    import stageware.conformance\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True, cwd=tmp_path
    )
    assert completed.stdout == (
        "stageware.conformance needs the 'hypothesis' package, from the `testing` extra: "
        "pip install -e '.[testing]' in a clone, "
        "or pip install 'stageware[testing] @ git+https://<your-git-host>/stageware.git'\n"
    )


def test_a_module_contributes_what_it_exports() -> None:
    module = types.ModuleType("exporting_policies")
    exec(compile(_POLICIES, "exporting_policies", "exec"), vars(module))

    every = cases_of([module], backends=["asyncio"], examples=1)
    module.__all__ = ["good"]  # type: ignore[attr-defined]
    exported = cases_of([module], backends=["asyncio"], examples=1)

    assert [case.id for case in every] == [
        "good-tool.before",
        "good-tool.after",
        "retries-run.start",
        "retries-tool.after",
    ]
    assert [case.id for case in exported] == ["good-tool.before", "good-tool.after"]
    with pytest.raises(ValueError, match="no middleware to check"):
        conformance_test(types.ModuleType("empty"))


def test_the_guide_s_test_module_checks_the_installed_plugin(
    pytester: pytest.Pytester, plugin_site: Path
) -> None:
    # The policies guide's one-line test module, as a plugin author writes it, against the
    # acme-policies distribution installed for real: a test per middleware and hook point.
    [code] = readme_blocks("### Testing a policy plugin: the conformance suite")
    pytester.syspathinsert(plugin_site)
    pytester.makepyfile(test_acme=code)

    result = pytester.runpytest("-v", "-p", "no:cacheprovider")

    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) >= 3, result.stdout.str()
    assert set(outcomes) == {"passed"}, result.stdout.str()
    result.stdout.fnmatch_lines(["*test_conformance[[]refund_limit-tool.before[]] PASSED*"])
