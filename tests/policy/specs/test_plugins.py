"""Plugin discovery, on distributions installed for real (see ``conftest``).

acme-policies contributes three middleware through one entry point; odd-policies has an
entry point of every form, sound and broken; acme-clash claims a name acme-policies has.
"""

from __future__ import annotations

import sys
from datetime import timedelta

import pytest

from stageware._policy._plugins import GROUP, PluginIndex, installed_plugins
from stageware.policy import Band, FailMode, HookPoint, SpecError


def _index() -> PluginIndex:
    return PluginIndex(installed_plugins())


@pytest.mark.usefixtures("plugins")
def test_installed_plugins_are_found_by_their_entry_points_without_importing_them() -> None:
    found = {
        (plugin.namespace, plugin.value, plugin.distribution) for plugin in installed_plugins()
    }

    assert ("acme", "acme_policies:MIDDLEWARE", "acme-policies 1.2.0") in found
    assert ("single", "odd_policies:shout", "odd-policies 0.3.0") in found
    assert ("broken", "odd_policies.broken", "odd-policies 0.3.0") in found
    assert "acme_policies" not in sys.modules
    assert "odd_policies" not in sys.modules


def test_without_the_plugins_on_the_path_none_is_found() -> None:
    assert [p for p in installed_plugins() if p.distribution.startswith("acme-policies")] == []


@pytest.mark.usefixtures("plugins")
def test_a_bare_name_is_qualified_with_the_entry_points_name() -> None:
    (plugin,) = [p for p in installed_plugins() if p.namespace == "acme"]

    names = [declared.name for declared in plugin.load()]

    # audit_tools is declared as "acme.audit_tools" already, and is not qualified twice.
    assert names == ["acme.no_weekend_refunds", "acme.refund_limit", "acme.audit_tools"]


@pytest.mark.usefixtures("plugins")
def test_a_qualified_middleware_keeps_its_declaration() -> None:
    declared = _index().find("acme.refund_limit")

    assert declared.hooks == (HookPoint.TOOL_BEFORE,)
    assert declared.fail_mode is FailMode.CLOSED
    assert declared.band is Band.APP
    assert declared.timeout == timedelta(seconds=1)
    assert declared.config is not None
    assert declared.config.__name__ == "RefundLimitSettings"
    assert declared.sample == {"limit": 500}
    assert declared.description == "A refund over the configured limit is blocked."


@pytest.mark.usefixtures("plugins")
def test_an_entry_point_may_name_a_module_a_middleware_or_a_tuple() -> None:
    index = _index()

    # The module's __all__ says which of its middleware it contributes; it exports shout
    # twice (as shout_again too), which is still one middleware.
    assert index.find("odd.shout").name == "odd.shout"
    assert index.find("odd.whisper").name == "odd.whisper"
    with pytest.raises(SpecError, match=r"no middleware 'odd.hidden'"):
        index.find("odd.hidden")
    assert index.find("single.shout").hooks == (HookPoint.OUTPUT_FINAL,)
    assert index.find("acme.no_weekend_refunds").name == "acme.no_weekend_refunds"


@pytest.mark.usefixtures("plugins")
def test_a_spec_that_uses_one_plugin_never_imports_a_broken_one() -> None:
    _index().find("acme.audit_tools")

    assert "acme_policies" in sys.modules
    assert "odd_policies" not in sys.modules


@pytest.mark.usefixtures("plugins")
@pytest.mark.parametrize(
    ("name", "problem"),
    [
        (
            "broken.x",
            "plugin entry point 'broken = odd_policies.broken' of odd-policies 0.3.0: cannot "
            "be loaded: ModuleNotFoundError: No module named 'acme_missing_dependency'",
        ),
        (
            "exits.x",
            "plugin entry point 'exits = odd_policies.exits' of odd-policies 0.3.0: cannot be "
            "loaded: it called sys.exit(3), which loading a policy does not allow",
        ),
        (
            "wrong.x",
            "plugin entry point 'wrong = odd_policies:NOT_MIDDLEWARE' of odd-policies 0.3.0: "
            "points at a dict ({'name': 'not a middleware'}); it must point at a middleware "
            "declared with @middleware, a list or tuple of them, or a module",
        ),
        (
            "empty.x",
            "plugin entry point 'empty = odd_policies:NOTHING' of odd-policies 0.3.0: "
            "contributes no middleware",
        ),
        (
            "twins.x",
            "plugin entry point 'twins = odd_policies:TWINS' of odd-policies 0.3.0: "
            "contributes two middleware named 'twins.shout'",
        ),
        (
            "mixed.x",
            "plugin entry point 'mixed = odd_policies:MIXED' of odd-policies 0.3.0: item 1 of "
            "odd_policies:MIXED is a str ('whisper'), not a middleware declared with @middleware",
        ),
    ],
)
def test_a_broken_plugin_is_named_by_its_distribution_and_entry_point(
    name: str, problem: str
) -> None:
    with pytest.raises(SpecError) as caught:
        _index().find(name)

    assert str(caught.value) == problem


@pytest.mark.usefixtures("plugins")
def test_an_entry_point_name_that_cannot_qualify_names_is_refused_when_loaded() -> None:
    (plugin,) = [p for p in installed_plugins() if p.namespace == "odd-names"]

    with pytest.raises(SpecError) as caught:
        plugin.load()

    assert str(caught.value) == (
        "plugin entry point 'odd-names = odd_policies:shout' of odd-policies 0.3.0: its name "
        "is not a dotted identifier such as 'acme', so it cannot qualify the names of its "
        "middleware"
    )


@pytest.mark.usefixtures("clashing")
def test_two_distributions_with_the_same_qualified_name_are_an_error_naming_both() -> None:
    with pytest.raises(SpecError) as caught:
        _index().find("acme.refund_limit")

    assert str(caught.value) == (
        "middleware 'acme.no_weekend_refunds' is contributed twice: by the entry point "
        "'acme = acme_clash:no_weekend_refunds' of acme-clash 0.1.0 and by the entry point "
        "'acme = acme_policies:MIDDLEWARE' of acme-policies 1.2.0"
    )


@pytest.mark.usefixtures("plugins")
def test_an_unknown_name_in_a_namespace_suggests_the_closest_and_lists_the_rest() -> None:
    with pytest.raises(SpecError) as caught:
        _index().find("acme.no_weekend_refund")

    assert str(caught.value) == (
        "no middleware 'acme.no_weekend_refund' (did you mean 'acme.no_weekend_refunds'?): "
        "the plugins of its namespace (acme-policies 1.2.0) contribute acme.audit_tools, "
        "acme.no_weekend_refunds, acme.refund_limit"
    )


@pytest.mark.usefixtures("plugins")
def test_an_unknown_namespace_is_suggested_from_entry_points_without_importing_a_plugin() -> None:
    # Importing every plugin to find what was meant would run code no spec asked for.
    with pytest.raises(SpecError, match=r"'acm.refund_limit' \(did you mean the namespace 'acme'"):
        _index().find("acm.refund_limit")
    with pytest.raises(SpecError) as caught:
        _index().find("no_weekend_refunds")

    message = str(caught.value)
    assert message.startswith(
        "no middleware 'no_weekend_refunds': a plugin's middleware is named with the plugin's "
        "namespace first ('namespace.no_weekend_refunds') (plugins: acme, broken, empty, exits, "
    )
    assert message.endswith("to import one from a module, write 'package.module:attribute'")
    assert "acme_policies" not in sys.modules
    assert "odd_policies" not in sys.modules


def test_with_no_plugin_installed_the_message_says_so() -> None:
    with pytest.raises(SpecError) as caught:
        PluginIndex(()).find("acme.x")

    assert str(caught.value) == (
        f"no middleware 'acme.x': no plugin is installed (none declares an entry point in "
        f"{GROUP!r}); to import one from a module, write 'package.module:attribute'"
    )
