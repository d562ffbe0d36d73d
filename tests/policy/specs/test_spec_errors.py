"""Every way a policy spec can be wrong, each reported as ``file:line: path: message``.

Each test writes a spec, reads it, and compares the ``SpecError``'s lines in full: the
file, the line, the place in the document and the message are all part of the contract.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from stageware._policy._spec._source import MAX_SPEC_BYTES
from stageware.policy import SpecError, load_policy, read_policy

from .conftest import WriteFile

pytestmark = pytest.mark.usefixtures("plugins")


def problems(path: Path, baseline: Path | None = None) -> list[str]:
    """The lines of the ``SpecError`` reading *path* raises."""
    with pytest.raises(SpecError) as caught:
        read_policy(path, baseline=baseline)
    return str(caught.value).splitlines()


# --- The file as YAML -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "version: 1\nmiddleware: [\n",
            "policy.yaml:3:1: expected the node content, but found '<stream end>'",
        ),
        (
            "version: 1\nmiddleware:\n  - use: a.b\n   band: app\n",
            "policy.yaml:4:4: expected <block end>, but found '<block mapping start>'",
        ),
        ("", "policy.yaml:1: the file is empty; a spec starts with 'version: 1'"),
        ("# nothing\n", "policy.yaml:1: the file is empty; a spec starts with 'version: 1'"),
        ("version: 1\nversion: 1\n", "policy.yaml:2: version: duplicate key (first on line 1)"),
        (
            "version: 1\nmiddleware:\n  - &m {use: acme.audit_tools}\n",
            "policy.yaml:3: YAML anchors and aliases are not supported; write it out",
        ),
        (
            # "Billion laughs": nine aliases per level expand to 10**9 strings.
            "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
            + "".join(
                f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n"
                for p, c in zip("abcdefgh", "bcdefghi", strict=True)
            ),
            "policy.yaml:1: YAML anchors and aliases are not supported; write it out",
        ),
        (
            "version: 1\nblocked_message: !!binary aGk=\n",
            "policy.yaml:2: blocked_message: unsupported YAML value of type "
            "'tag:yaml.org,2002:binary'; quote it for text",
        ),
        (
            "version: 1\nmiddleware:\n  - use: acme.refund_limit\n"
            "    settings: {when: 2024-01-01}\n",
            "policy.yaml:4: middleware[0].settings.when: unsupported YAML value of type "
            "'tag:yaml.org,2002:timestamp'; quote it for text",
        ),
        (
            "version: 1\nretry_budgets: {model.response: .inf}\n",
            "policy.yaml:2: retry_budgets['model.response']: infinite and NaN numbers are not "
            "supported",
        ),
        (
            "version: 1\nmiddleware:\n  - {<<: {use: a.b}}\n",
            "policy.yaml:3: middleware[0]: a key must be a plain name (no '<<', lists or maps)",
        ),
        (
            "version: 1\nmiddleware:\n" + "".join("  " * i + "- \n" for i in range(1, 40)),
            "policy.yaml:34: collections are nested more than 32 deep",
        ),
    ],
    ids=[
        "unclosed",
        "bad-indent",
        "empty",
        "only-comment",
        "duplicate-key",
        "anchor",
        "alias-bomb",
        "binary",
        "timestamp",
        "infinity",
        "merge-key",
        "too-deep",
    ],
)
def test_a_file_that_is_not_plain_yaml_data(write: WriteFile, text: str, expected: str) -> None:
    assert problems(write("policy.yaml", text)) == [expected]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'version: 1\nblocked_message: "a\fb"\n',
            "policy.yaml:2:20: the character U+000C ('\\x0c') is not allowed in YAML; remove it",
        ),
        (
            "version: 1\n\0\n",
            "policy.yaml:2:1: the character U+0000 ('\\x00') is not allowed in YAML; remove it",
        ),
        (
            "version: 1\r\nblocked_message: \x1b[31mred\n",
            "policy.yaml:2:18: the character U+001B ('\\x1b') is not allowed in YAML; remove it",
        ),
        (
            "version: 1\nblocked_message: @x\n",
            "policy.yaml:2:18: found character '@' that cannot start any token",
        ),
        (
            "version: 1\nmiddleware: [a, b\n",
            "policy.yaml:3:1: expected ',' or ']', but got '<stream end>'",
        ),
        (
            "version: 1\n---\nversion: 1\n",
            "policy.yaml:2:1: expected a single document in the stream, but found another document",
        ),
    ],
    ids=["form-feed", "nul", "escape", "scanner", "parser", "composer"],
)
def test_what_yaml_refuses_is_a_problem_at_its_line_and_column(
    write: WriteFile, text: str, expected: str
) -> None:
    path = write("policy.yaml", text)

    assert problems(path) == [expected]
    with pytest.raises(SpecError, match=f"^{re.escape(expected)}$"):
        load_policy(path)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("!!float abc", "'abc' is not a valid !!float value"),
        ("!!bool maybe", "'maybe' is not a valid !!bool value"),
        ("!!int 1.5", "'1.5' is not a valid !!int value"),
        ("!!null x", "'x' is not a valid !!null value"),
    ],
)
def test_an_explicit_tag_must_fit_its_value(write: WriteFile, value: str, expected: str) -> None:
    # PyYAML's constructors raise ValueError or KeyError for these, or read `!!null x` as null.
    path = write("policy.yaml", f"version: 1\nretry_budgets: {{model.response: {value}}}\n")

    assert problems(path) == [f"policy.yaml:2: retry_budgets['model.response']: {expected}"]


def test_an_explicit_tag_may_write_a_float_as_an_integer(write: WriteFile) -> None:
    path = write(
        "policy.yaml",
        "version: 1\nmiddleware:\n  - use: acme.refund_limit\n    settings: {limit: !!float 1}\n",
    )

    # The float reaches the config model, whose strictness is its own: 1.0 is an integer.
    assert read_policy(path).entries[0].settings == {"limit": 1.0}


def test_a_file_that_is_not_utf8(write: WriteFile, tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_bytes(b"version: 1\nblocked_message: caf\xe9\n")

    assert problems(Path("policy.yaml")) == ["policy.yaml:2:21: byte 0xe9 is not UTF-8"]


def test_a_file_over_the_bound_is_refused_unread(write: WriteFile, tmp_path: Path) -> None:
    entry = "  - use: acme.audit_tools\n"
    count = MAX_SPEC_BYTES // len(entry)
    path = write("policy.yaml", "version: 1\nmiddleware:\n" + entry * count)
    assert path.stat().st_size > MAX_SPEC_BYTES

    assert problems(path) == [
        "policy.yaml: is larger than 256 KiB, the most a spec file may hold (a spec lists "
        "middleware and their settings, not data)"
    ]


def test_a_huge_file_is_refused_without_reading_it_whole(write: WriteFile) -> None:
    path = write("policy.yaml", "version: 1\n")
    with path.open("r+b") as sparse:  # 64 MiB of NUL bytes that take no disk
        sparse.truncate(64 * 1024**2)

    assert problems(path) == [
        "policy.yaml: is larger than 256 KiB, the most a spec file may hold (a spec lists "
        "middleware and their settings, not data)"
    ]


def test_a_file_at_the_bound_is_read(write: WriteFile, tmp_path: Path) -> None:
    head = "version: 1\nblocked_message: "
    path = write("policy.yaml", head + "x" * (MAX_SPEC_BYTES - len(head) - 1) + "\n")
    assert path.stat().st_size == MAX_SPEC_BYTES

    assert read_policy(path).blocked_message == "x" * (MAX_SPEC_BYTES - len(head) - 1)


def test_only_a_regular_file_is_read(write: WriteFile, tmp_path: Path) -> None:
    # Reading /dev/zero never ends, and opening a FIFO waits for a writer: both would hang.
    os.mkfifo(tmp_path / "fifo.yaml")
    (tmp_path / "folder.yaml").mkdir()

    assert problems(Path("/dev/zero")) == [
        "/dev/zero: is a character device; a spec must be a regular file"
    ]
    assert problems(Path("fifo.yaml")) == ["fifo.yaml: is a FIFO; a spec must be a regular file"]
    assert problems(Path("folder.yaml")) == [
        "folder.yaml: is a directory; a spec must be a regular file"
    ]


def test_a_file_that_does_not_exist_is_an_os_error(write: WriteFile) -> None:
    with pytest.raises(FileNotFoundError):
        read_policy(Path("missing.yaml"))


# --- The shape of the spec --------------------------------------------------------------


def test_unknown_keys_name_the_closest_valid_one(write: WriteFile) -> None:
    path = write(
        "policy.yaml",
        """
        version: 1
        middlewares: []
        middleware:
          - use: acme.audit_tools
            bnad: app
            colour: red
        """,
    )

    assert problems(path) == [
        "policy.yaml:2: middlewares: unknown key 'middlewares' (did you mean 'middleware'?)",
        "policy.yaml:5: middleware[0].bnad: unknown key 'bnad' (did you mean 'band'?)",
        "policy.yaml:6: middleware[0].colour: unknown key 'colour' (valid keys: use, band, "
        "hooks, settings, fail_mode, timeout)",
    ]


def test_missing_and_mistyped_values(write: WriteFile) -> None:
    path = write(
        "policy.yaml",
        """
        version: "1"
        middleware:
          - band: app
          - 3
          - use: [acme.audit_tools]
          - use: acme.audit_tools
            hooks: []
          - use: acme.audit_tools
            settings: [limit]
        retry_budgets: {model.response: -1, tool.after: "2"}
        blocked_message: ""
        """,
    )

    assert problems(path) == [
        "policy.yaml:1: version: Input should be 1, got the string '1'",
        "policy.yaml:3: middleware[0].use: missing required key 'use'",
        "policy.yaml:4: middleware[1]: expected a mapping, got the number 3",
        "policy.yaml:5: middleware[2].use: expected a string, got a list",
        "policy.yaml:7: middleware[3].hooks: must not be empty",
        "policy.yaml:9: middleware[4].settings: expected a mapping, got a list",
        "policy.yaml:10: retry_budgets['model.response']: Input should be greater than or "
        "equal to 0, got the number -1",
        "policy.yaml:10: retry_budgets['tool.after']: expected an integer, got the string '2'",
        "policy.yaml:11: blocked_message: String should have at least 1 character, got the "
        "string ''",
    ]


def test_a_spec_must_be_a_mapping_with_a_version(write: WriteFile) -> None:
    assert problems(write("policy.yaml", "- use: acme.audit_tools\n")) == [
        "policy.yaml:1: expected a mapping, got a list"
    ]
    assert problems(write("other.yaml", "middleware: []\n")) == [
        "other.yaml:1: version: missing required key 'version'"
    ]


def test_hook_points_bands_fail_modes_and_timeouts_are_read_with_near_miss_hints(
    write: WriteFile,
) -> None:
    path = write(
        "policy.yaml",
        """
        version: 1
        middleware:
          - use: acme.audit_tools
            hooks: [tool.before, tool.afterwards]
            band: guardrial
            fail_mode: shut
            timeout: 2 sec
          - use: acme.refund_limit
            timeout: 0s
        retry_budgets: {model.respons: 1}
        """,
    )

    assert problems(path) == [
        "policy.yaml:4: middleware[0].hooks[1]: unknown hook point 'tool.afterwards'; did you "
        "mean 'tool.after'? (valid: run.start, input.received, approval.resolved, "
        "route.select, context.assemble, model.request, stream.chunk, model.response, "
        "tool.before, tool.after, output.final, run.error, run.end)",
        "policy.yaml:5: middleware[0].band: unknown band 'guardrial'; did you mean "
        "'guardrail'? (valid: baseline, guardrail, platform, app)",
        "policy.yaml:6: middleware[0].fail_mode: unknown fail mode 'shut' (valid: open, closed)",
        "policy.yaml:7: middleware[0].timeout: cannot read '2 sec' as a duration; write a "
        "number and a unit, ms, s, m or h: '250ms', '2s', '1.5m', '1h' (or ISO 8601: 'PT2S')",
        "policy.yaml:9: middleware[1].timeout: a timeout must be a positive, finite duration, "
        "got '0s'",
        "policy.yaml:10: retry_budgets['model.respons']: unknown hook point 'model.respons'; "
        "did you mean 'model.response'? (valid: run.start, input.received, "
        "approval.resolved, route.select, context.assemble, model.request, stream.chunk, "
        "model.response, tool.before, tool.after, output.final, run.error, run.end)",
    ]


def test_use_must_be_a_qualified_name_or_a_module_attribute(write: WriteFile) -> None:
    path = write(
        "policy.yaml",
        """
        version: 1
        middleware:
          - use: acme no_weekend_refunds
          - use: "app_policies:"
        """,
    )

    assert problems(path) == [
        "policy.yaml:3: middleware[0].use: 'acme no_weekend_refunds' names no middleware: "
        "write a plugin's qualified name ('acme.no_weekend_refunds') or "
        "'package.module:attribute'",
        "policy.yaml:4: middleware[1].use: 'app_policies:' names no middleware: write a "
        "plugin's qualified name ('acme.no_weekend_refunds') or 'package.module:attribute'",
    ]


def test_a_retry_budget_only_where_retry_is_allowed(write: WriteFile) -> None:
    path = write("policy.yaml", "version: 1\nretry_budgets:\n  tool.before: 1\n")

    assert problems(path) == [
        "policy.yaml:3: retry_budgets['tool.before']: tool.before allows Continue, Block, "
        "Suspend, Escalate, Guide, not Retry, so it has no retry budget (hook points with "
        "one: stream.chunk, model.response, tool.after)"
    ]


# --- What an entry names ----------------------------------------------------------------


def test_an_unknown_plugin_middleware_gets_the_closest_name(write: WriteFile) -> None:
    path = write(
        "policy.yaml",
        """
        version: 1
        middleware:
          - use: acme.no_weekend_refund
        """,
    )

    assert problems(path) == [
        "policy.yaml:3: middleware[0].use: no middleware 'acme.no_weekend_refund' (did you "
        "mean 'acme.no_weekend_refunds'?): the plugins of its namespace (acme-policies "
        "1.2.0) contribute acme.audit_tools, acme.no_weekend_refunds, acme.refund_limit"
    ]


def test_a_broken_plugin_is_reported_at_the_entry_that_needs_it(write: WriteFile) -> None:
    path = write(
        "policy.yaml",
        """
        version: 1
        middleware:
          - use: acme.audit_tools
          - use: broken.anything
        """,
    )

    assert problems(path) == [
        "policy.yaml:4: middleware[1].use: plugin entry point 'broken = odd_policies.broken' "
        "of odd-policies 0.3.0: cannot be loaded: ModuleNotFoundError: No module named "
        "'acme_missing_dependency'"
    ]


def test_bad_module_attribute_references_say_what_failed(write: WriteFile) -> None:
    write("exploding.py", "raise RuntimeError('no database configured')\n")
    write("needs_missing.py", "import not_installed_anywhere\n")
    write(
        "app_policies.py",
        """
        from typing import Any

        from stageware.policy import PolicyEnv, middleware


        @middleware(hooks=["run.start"], fail_mode="open")
        async def greet(event: Any, env: PolicyEnv) -> None:
            '''Greets.'''


        async def undecorated(event: Any, env: PolicyEnv) -> None:
            '''Not declared.'''
        """,
    )
    path = write(
        "policy.yaml",
        """
        version: 1
        middleware:
          - use: no_such_package.policies:greet
          - use: exploding:greet
          - use: needs_missing:greet
          - use: app_policies:gret
          - use: app_policies:undecorated
          - use: app_policies:greet.inner
        """,
    )

    assert problems(path) == [
        "policy.yaml:3: middleware[0].use: no module named 'no_such_package' (searched "
        "sys.path: is the package installed, or its directory the current one?)",
        "policy.yaml:4: middleware[1].use: importing 'exploding' failed: RuntimeError: no "
        "database configured",
        "policy.yaml:5: middleware[2].use: importing 'needs_missing' failed: "
        "ModuleNotFoundError: No module named 'not_installed_anywhere'",
        "policy.yaml:6: middleware[3].use: 'app_policies' has no attribute 'gret' (did you "
        "mean 'greet'?)",
        "policy.yaml:7: middleware[4].use: 'app_policies:undecorated' is a function, not a "
        "middleware: declare it with @middleware(hooks=..., fail_mode=...)",
        "policy.yaml:8: middleware[5].use: 'app_policies.greet' has no attribute 'inner'",
    ]


# --- What an entry may change -------------------------------------------------------------


def test_the_baseline_band_is_for_the_baseline_profile_only(write: WriteFile) -> None:
    path = write(
        "policy.yaml",
        """
        version: 1
        middleware:
          - use: acme.audit_tools
            band: baseline
        """,
    )

    assert problems(path) == [
        "policy.yaml:3: middleware[0]: middleware 'acme.audit_tools': band 'baseline' is "
        "reserved for the org baseline profile (pass it with baseline=...); use guardrail, "
        "platform or app"
    ]


def test_hooks_may_only_narrow_the_declared_ones(write: WriteFile) -> None:
    path = write(
        "policy.yaml",
        """
        version: 1
        middleware:
          - use: acme.audit_tools
            hooks: [tool.after, model.response]
        """,
    )

    assert problems(path) == [
        "policy.yaml:3: middleware[0]: middleware 'acme.audit_tools': hooks may only narrow "
        "the declared ones (tool.before, tool.after); model.response is not among them"
    ]


def test_a_fail_mode_may_be_tightened_never_loosened(write: WriteFile) -> None:
    path = write(
        "policy.yaml",
        """
        version: 1
        middleware:
          - use: acme.no_weekend_refunds
            fail_mode: open
        """,
    )

    assert problems(path) == [
        "policy.yaml:3: middleware[0]: middleware 'acme.no_weekend_refunds' is declared "
        "fail_mode 'closed'; a spec may tighten a fail mode to 'closed', never loosen it to "
        "'open'"
    ]


def test_a_timeout_may_be_shortened_never_lengthened(write: WriteFile) -> None:
    path = write(
        "policy.yaml",
        """
        version: 1
        middleware:
          - use: acme.no_weekend_refunds
            timeout: 3s
        """,
    )

    assert problems(path) == [
        "policy.yaml:3: middleware[0]: middleware 'acme.no_weekend_refunds': timeout 3s is "
        "longer than the declared 2s; a spec may only shorten it"
    ]


def test_bad_settings_are_reported_at_each_setting_with_pydantics_words(
    write: WriteFile,
) -> None:
    path = write(
        "policy.yaml",
        """
        version: 1
        middleware:
          - use: acme.audit_tools
          - use: acme.refund_limit
            settings:
              limit: lots
              currency: [EUR]
        """,
    )

    with pytest.raises(SpecError) as caught:
        read_policy(path)

    assert str(caught.value).splitlines() == [
        "policy.yaml:6: middleware 'acme.refund_limit': settings.limit: Input should be a valid "
        "integer, unable to parse string as an integer",
        "policy.yaml:7: middleware 'acme.refund_limit': settings.currency: Input should be a "
        "valid string",
    ]
    assert caught.value.middleware == "acme.refund_limit"
    assert caught.value.locations == (
        ("middleware", 1, "settings", "limit"),
        ("middleware", 1, "settings", "currency"),
    )


def test_settings_must_be_finite_numbers_whatever_the_model_accepts(write: WriteFile) -> None:
    # pydantic reads the text inf, nan and 1e400 into a float as infinity or NaN: a limit
    # that could never trip.
    write(
        "app_policies.py",
        """
        from dataclasses import dataclass
        from typing import Any

        from pydantic import BaseModel, ConfigDict, Field

        from stageware.policy import PolicyEnv, middleware


        class Band(BaseModel):
            low: float
            high: float


        @dataclass
        class Window:
            seconds: float


        class Settings(BaseModel):
            limit: float
            bands: list[Band] = []
            per_tool: dict[str, float] = Field(default={}, alias="perTool")
            window: Window | None = None


        class Unbounded(BaseModel):
            model_config = ConfigDict(allow_inf_nan=True)
            limit: float


        @middleware(hooks=["run.start"], fail_mode="open", config=Settings)
        class Capped:
            def __init__(self, settings: Settings) -> None:
                self.settings = settings

            async def __call__(self, event: Any, env: PolicyEnv) -> None:
                return None


        @middleware(hooks=["run.start"], fail_mode="open", config=Unbounded)
        class Open:
            def __init__(self, settings: Unbounded) -> None:
                self.settings = settings

            async def __call__(self, event: Any, env: PolicyEnv) -> None:
                return None
        """,
    )
    path = write(
        "policy.yaml",
        """
        version: 1
        middleware:
          - use: app_policies:Capped
            settings:
              limit: inf
              bands:
                - {low: 1, high: 1e400}
              perTool: {refund: -Infinity, search: 2.5, fetch: nan}
              window: {seconds: "1e999"}
          - use: app_policies:Open
            settings: {limit: inf}
        """,
    )

    assert problems(path) == [
        "policy.yaml:5: middleware 'Capped': settings.limit: infinite and NaN numbers are not "
        "supported",
        "policy.yaml:7: middleware 'Capped': settings.bands[0].high: infinite and NaN numbers "
        "are not supported",
        "policy.yaml:8: middleware 'Capped': settings.perTool.refund: infinite and NaN numbers "
        "are not supported",
        "policy.yaml:8: middleware 'Capped': settings.perTool.fetch: infinite and NaN numbers "
        "are not supported",
        "policy.yaml:9: middleware 'Capped': settings.window.seconds: infinite and NaN numbers "
        "are not supported",
    ]


def test_a_timeout_past_what_a_timedelta_holds_is_a_problem(write: WriteFile) -> None:
    path = write(
        "policy.yaml",
        """
        version: 1
        middleware:
          - use: acme.audit_tools
            timeout: 99999999999999999999h
          - use: acme.refund_limit
            timeout: 100000000000000000000000
        """,
    )

    assert problems(path) == [
        "policy.yaml:4: middleware[0].timeout: '99999999999999999999h' is longer than any "
        "timeout can be",
        "policy.yaml:6: middleware[1].timeout: 100000000000000000000000 is longer than any "
        "timeout can be",
    ]


def test_required_settings_left_out_and_settings_for_none(write: WriteFile) -> None:
    path = write(
        "policy.yaml",
        """
        version: 1
        middleware:
          - use: acme.refund_limit
          - use: acme.audit_tools
            settings: {level: high}
        """,
    )

    assert problems(path) == [
        "policy.yaml:3: middleware 'acme.refund_limit': settings.limit: Field required",
        "policy.yaml:4: middleware[1]: middleware 'acme.audit_tools' takes no settings (it "
        "declares no config model), got ['level']",
    ]


def test_a_class_middleware_that_fails_to_build_is_reported_at_its_entry(
    write: WriteFile,
) -> None:
    write(
        "app_policies.py",
        """
        from typing import Any

        from pydantic import BaseModel

        from stageware.policy import PolicyEnv, middleware


        class Settings(BaseModel):
            url: str


        @middleware(hooks=["run.start"], fail_mode="open", config=Settings)
        class Remote:
            '''Asks a remote service.'''

            def __init__(self, settings: Settings) -> None:
                raise ConnectionError(f"cannot reach {settings.url}")

            async def __call__(self, event: Any, env: PolicyEnv) -> None:
                return None
        """,
    )
    path = write(
        "policy.yaml",
        """
        version: 1
        middleware:
          - use: app_policies:Remote
            settings: {url: "http://policy.internal"}
        """,
    )

    assert problems(path) == [
        "policy.yaml:3: middleware[0]: building middleware 'Remote' failed: ConnectionError: "
        "cannot reach http://policy.internal"
    ]


def test_author_code_that_exits_is_a_problem_naming_where(write: WriteFile) -> None:
    # A module, a class middleware's __init__ and a config model's validator are code the
    # operator did not write; a sys.exit in them is reported, not obeyed.
    write("scripted.py", "import sys\n\nsys.exit('done')\n")
    write(
        "app_policies.py",
        """
        import sys
        from typing import Any

        from pydantic import BaseModel, field_validator

        from stageware.policy import PolicyEnv, middleware


        class Settings(BaseModel):
            url: str

            @field_validator("url")
            @classmethod
            def reachable(cls, url: str) -> str:
                if url == "quit":
                    sys.exit(4)
                return url


        @middleware(hooks=["run.start"], fail_mode="open", config=Settings)
        class Remote:
            def __init__(self, settings: Settings) -> None:
                sys.exit(5)

            async def __call__(self, event: Any, env: PolicyEnv) -> None:
                return None


        @middleware(hooks=["run.end"], fail_mode="open", config=Settings)
        class Other:
            def __init__(self, settings: Settings) -> None:
                self.settings = settings

            async def __call__(self, event: Any, env: PolicyEnv) -> None:
                return None
        """,
    )
    path = write(
        "policy.yaml",
        """
        version: 1
        middleware:
          - use: scripted:anything
          - use: app_policies:Remote
            settings: {url: "http://policy.internal"}
          - use: app_policies:Other
            settings: {url: quit}
        """,
    )

    expected = [
        "policy.yaml:3: middleware[0].use: importing 'scripted' failed: it called "
        "sys.exit('done'), which loading a policy does not allow",
        "policy.yaml:4: middleware[1]: building middleware 'Remote' failed: it called "
        "sys.exit(5), which loading a policy does not allow",
        "policy.yaml:7: middleware 'Other': settings: validating failed: it called sys.exit(4), "
        "which loading a policy does not allow",
    ]
    assert problems(path) == expected
    with pytest.raises(SpecError) as caught:
        load_policy(path)
    assert str(caught.value).splitlines() == expected


def test_other_base_exceptions_are_contained_but_an_interrupt_passes(write: WriteFile) -> None:
    write("stops.py", "class Stop(BaseException):\n    pass\n\n\nraise Stop('halt')\n")
    write("interrupted.py", "raise KeyboardInterrupt\n")
    stopping = write("policy.yaml", "version: 1\nmiddleware:\n  - use: stops:anything\n")
    interrupted = write("other.yaml", "version: 1\nmiddleware:\n  - use: interrupted:x\n")

    assert problems(stopping) == [
        "policy.yaml:3: middleware[0].use: importing 'stops' failed: Stop: halt"
    ]
    # Ctrl-C while a policy loads is the user's: it stops the load.
    with pytest.raises(KeyboardInterrupt):
        read_policy(interrupted)


# --- Entries that repeat ----------------------------------------------------------------


def test_the_same_middleware_twice_in_one_spec(write: WriteFile) -> None:
    path = write(
        "policy.yaml",
        """
        version: 1
        middleware:
          - use: acme.audit_tools
          - use: acme.refund_limit
            settings: {limit: 1}
          - use: acme.audit_tools
            hooks: [tool.after]
        """,
    )

    assert problems(path) == [
        "policy.yaml:6: middleware[2].use: middleware 'acme.audit_tools' is already installed "
        "on line 3; a spec installs each middleware once"
    ]


def test_the_same_middleware_twice_in_the_baseline_profile(write: WriteFile) -> None:
    org = write(
        "org.yaml",
        "version: 1\nmiddleware:\n  - use: acme.audit_tools\n  - use: acme.audit_tools\n",
    )

    assert problems(write("policy.yaml", "version: 1\n"), baseline=org) == [
        "org.yaml:4: middleware[1].use: middleware 'acme.audit_tools' is already installed on "
        "line 3; a spec installs each middleware once"
    ]


def test_an_application_spec_cannot_narrow_reconfigure_or_repeat_a_baseline_entry(
    write: WriteFile,
) -> None:
    org = write(
        "org.yaml",
        """
        version: 1
        middleware:
          - use: acme.audit_tools
            band: baseline
          - use: acme.refund_limit
            band: guardrail
            settings: {limit: 1000}
        """,
    )
    path = write(
        "policy.yaml",
        """
        version: 1
        middleware:
          - use: acme.audit_tools
            hooks: [tool.after]
          - use: acme.refund_limit
            settings: {limit: 5000}
        """,
    )

    assert problems(path, baseline=org) == [
        "policy.yaml:3: middleware[0].use: middleware 'acme.audit_tools' is installed by the "
        "org baseline profile (org.yaml:3); an application spec cannot install it again, "
        "narrow, reconfigure or remove it",
        "policy.yaml:5: middleware[1].use: middleware 'acme.refund_limit' is installed by the "
        "org baseline profile (org.yaml:5); an application spec cannot install it again, "
        "narrow, reconfigure or remove it",
    ]


def test_every_problem_of_both_files_is_reported_at_once(write: WriteFile) -> None:
    # Each problem is independent of the others: none hides another.
    org = write(
        "org.yaml",
        """
        version: 1
        middleware:
          - use: acme.audit_tool
          - use: acme.no_weekend_refunds
            band: baseline
            fail_mode: shut
          - use: odd.shout
            band: baseline
            hooks: [run.start]
        blocked_mesage: Ask the finance team.
        """,
    )
    spec = write(
        "policy.yaml",
        """
        version: 1
        retry_budget: {}
        middleware:
          - use: acme.refund_limit
            settings: {limit: inf, currency: 7}
          - use: acme.audit_tools
            band: guardrial
          - use: odd.whisper
            band: baseline
          - use: house_rules:polite
        retry_budgets: {tool.before: 1}
        """,
    )

    assert problems(spec, baseline=org) == [
        "org.yaml:3: middleware[0].use: no middleware 'acme.audit_tool' (did you mean "
        "'acme.audit_tools'?): the plugins of its namespace (acme-policies 1.2.0) contribute "
        "acme.audit_tools, acme.no_weekend_refunds, acme.refund_limit",
        "org.yaml:6: middleware[1].fail_mode: unknown fail mode 'shut' (valid: open, closed)",
        "org.yaml:7: middleware[2]: middleware 'odd.shout': hooks may only narrow the declared "
        "ones (output.final); run.start is not among them",
        "org.yaml:10: blocked_mesage: unknown key 'blocked_mesage' (did you mean "
        "'blocked_message'?)",
        "policy.yaml:2: retry_budget: unknown key 'retry_budget' (did you mean 'retry_budgets'?)",
        "policy.yaml:5: middleware 'acme.refund_limit': settings.limit: Input should be a "
        "valid integer, unable to parse string as an integer",
        "policy.yaml:5: middleware 'acme.refund_limit': settings.currency: Input should be a "
        "valid string",
        "policy.yaml:7: middleware[1].band: unknown band 'guardrial'; did you mean "
        "'guardrail'? (valid: baseline, guardrail, platform, app)",
        "policy.yaml:8: middleware[2]: middleware 'odd.whisper': band 'baseline' is reserved "
        "for the org baseline profile (pass it with baseline=...); use guardrail, platform or "
        "app",
        "policy.yaml:10: middleware[3].use: no module named 'house_rules' (searched sys.path: "
        "is the package installed, or its directory the current one?)",
        "policy.yaml:11: retry_budgets['tool.before']: tool.before allows Continue, Block, "
        "Suspend, Escalate, Guide, not Retry, so it has no retry budget (hook points with "
        "one: stream.chunk, model.response, tool.after)",
    ]


def test_a_file_whose_version_is_wrong_is_reported_for_its_shape_only(
    write: WriteFile,
) -> None:
    # A future version's entries may mean something else: they are not checked as version 1.
    path = write(
        "policy.yaml",
        "version: 2\nmiddleware:\n  - use: acme.nothing\n    band: nowhere\n",
    )

    assert problems(path) == [
        "policy.yaml:1: version: Input should be 1, got the number 2",
        "policy.yaml:4: middleware[0].band: unknown band 'nowhere' (valid: baseline, "
        "guardrail, platform, app)",
    ]
    assert problems(write("other.yaml", "middleware:\n  - use: acme.nothing\n")) == [
        "other.yaml:1: version: missing required key 'version'"
    ]


def test_a_file_yaml_cannot_read_leaves_the_other_checked(write: WriteFile) -> None:
    org = write("org.yaml", "version: 1\nmiddleware: [\n")
    spec = write("policy.yaml", "version: 1\nmiddleware:\n  - use: acme.refund_limt\n")

    assert [line.split(": ", 2)[:2] for line in problems(spec, baseline=org)] == [
        ["org.yaml:3:1", "expected the node content, but found '<stream end>'"],
        ["policy.yaml:3", "middleware[0].use"],
    ]


@pytest.mark.parametrize(
    ("version", "got"),
    [("true", "true"), ("1.0", "the number 1.0"), ('"1"', "the string '1'"), ("2", "the number 2")],
)
def test_only_the_integer_1_is_version_1(write: WriteFile, version: str, got: str) -> None:
    # true and 1.0 equal 1 in Python, but the format's version is the integer.
    path = write("policy.yaml", f"version: {version}\n")

    assert problems(path) == [f"policy.yaml:1: version: Input should be 1, got {got}"]
    with pytest.raises(SpecError, match=r"^policy.yaml:1: version: Input should be 1, got "):
        load_policy(path)


def test_load_policy_raises_the_same_errors(write: WriteFile) -> None:
    path = write("policy.yaml", "version: 2\n")

    with pytest.raises(
        SpecError, match=r"^policy.yaml:1: version: Input should be 1, got the number 2$"
    ):
        load_policy(path)
