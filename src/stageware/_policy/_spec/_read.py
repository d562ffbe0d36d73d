"""Reading a policy spec and the org baseline profile into the entries to install.

Each file is parsed and checked for shape first; then each entry's ``use`` is resolved
to a declared middleware and built into a ``PolicyEntry``, which holds the rules a spec
must keep (narrow hooks, tighten the fail mode, shorten the timeout, baseline only from
the profile). Every problem found in either file is reported at once, as one
``SpecError`` with a ``file:line: path: message`` line each.

A middleware is installed once per policy: naming it twice in a file is an error, and so
is an application spec naming a middleware the baseline profile installs, since any
entry of its own would narrow, loosen or reconfigure what the operator installed. That
is also why the application spec cannot remove a baseline entry: it has no way to name
one that does not fail.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import final

from stageware._extras import needs_extra
from stageware._generated.policy_points import HookPoint
from stageware._host.models import Model
from stageware._policy._author_code import PASSING, describe_failure
from stageware._policy._declare import MiddlewareDef
from stageware._policy._engine import PolicyEngine
from stageware._policy._entries import PolicyEntry
from stageware._policy._errors import SpecError
from stageware._policy._identity import Authenticator
from stageware._policy._outcomes import Retry
from stageware._policy._plugins import PluginIndex, installed_plugins
from stageware._policy._rules import ALLOWED, allowed_names

from ._document import DocPath, Document, Problem, spec_error
from ._model import SpecEntry
from ._references import resolve
from ._source import read_source
from ._validation import CheckedSpec, validate_settings, validate_spec

__all__ = ["PolicySpec", "load_policy", "read_policy"]


@final
@dataclass(frozen=True)
class PolicySpec:
    """A policy spec and its baseline profile, read, resolved and built.

    Settings of the run (budgets, messages) come from the spec where it gives them, else
    from the profile; ``None`` leaves the engine's default.

    Attributes:
        entries: The middleware to install: the baseline profile's entries, then the
            spec's, each in file order (within a band, the order they run in).
        retry_budgets: Retries allowed per hook point: the profile's, overridden per hook
            point by the spec's.
        blocked_message: The text a blocked run ends with.
        escalated_message: The text an escalated run ends with.
        sources: Where each entry was written (``policy.yaml:4``), by middleware name.
    """

    entries: tuple[PolicyEntry, ...]
    retry_budgets: Mapping[HookPoint, int]
    blocked_message: str | None
    escalated_message: str | None
    sources: Mapping[str, str]

    def engine(
        self,
        *,
        retry_budgets: Mapping[HookPoint | str, int] | None = None,
        blocked_message: str | None = None,
        escalated_message: str | None = None,
        models: Mapping[str, Model] | None = None,
        authenticator: Authenticator | None = None,
    ) -> PolicyEngine:
        """The engine that installs these entries; arguments given here win over the files.

        ``retry_budgets`` given here override the files' per hook point.

        Raises:
            ValueError: For a retry budget given here that the engine refuses.
        """
        # A HookPoint is equal to its string value, so a key given either way overrides.
        budgets: dict[HookPoint | str, int] = dict(self.retry_budgets.items())
        budgets.update(retry_budgets or {})
        messages: dict[str, str] = {}
        blocked = blocked_message if blocked_message is not None else self.blocked_message
        if blocked is not None:
            messages["blocked_message"] = blocked
        escalated = escalated_message if escalated_message is not None else self.escalated_message
        if escalated is not None:
            messages["escalated_message"] = escalated
        return PolicyEngine(
            self.entries,
            retry_budgets=budgets,
            models=models,
            authenticator=authenticator,
            **messages,
        )


def load_policy(
    path: str | os.PathLike[str],
    *,
    baseline: str | os.PathLike[str] | None = None,
    retry_budgets: Mapping[HookPoint | str, int] | None = None,
    blocked_message: str | None = None,
    escalated_message: str | None = None,
    models: Mapping[str, Model] | None = None,
    authenticator: Authenticator | None = None,
) -> PolicyEngine:
    """The policy engine for the spec at *path*, after the org baseline profile *baseline*.

    ``Agent(model, policy=load_policy("policy.yaml", baseline="org.yaml"))``. Keyword
    arguments are the engine's (see ``PolicyEngine``) and win over what the files say.

    Raises:
        SpecError: For every problem in either file, one ``file:line: path: message`` line
            each.
        OSError: If a file cannot be read.
        ImportError: If PyYAML (the ``policy`` extra) is not installed.
    """
    return read_policy(path, baseline=baseline).engine(
        retry_budgets=retry_budgets,
        blocked_message=blocked_message,
        escalated_message=escalated_message,
        models=models,
        authenticator=authenticator,
    )


def read_policy(
    path: str | os.PathLike[str], *, baseline: str | os.PathLike[str] | None = None
) -> PolicySpec:
    """Read the policy spec at *path*, after the org baseline profile at *baseline*.

    Messages name the files as given here.

    Raises:
        SpecError: For every problem in either file, one ``file:line: path: message`` line
            each.
        OSError: If a file cannot be read.
        ImportError: If PyYAML (the ``policy`` extra) is not installed.
    """
    try:
        from ._yaml import parse_yaml  # PyYAML comes with the policy extra
    except ImportError as exc:
        if exc.name != "yaml":
            raise
        raise ImportError(
            "reading a policy spec needs PyYAML, from " + needs_extra("policy"), name="yaml"
        ) from None
    files = [(baseline, True)] if baseline is not None else []
    files.append((path, False))
    problems: list[Problem] = []
    specs: list[tuple[Document, CheckedSpec, bool]] = []
    for file, is_baseline in files:
        source = read_source(file, os.fspath(file))
        if isinstance(source, Problem):
            problems.append(source)
            continue
        document = parse_yaml(source, os.fspath(file))
        if isinstance(document, list):
            problems += document
            continue
        # What is wrong with the file's shape is reported, and what is right is built:
        # an entry's problems show in the same run as a misspelt key elsewhere.
        checked = validate_spec(document)
        problems += checked.problems
        if checked.spec is not None:
            specs.append((document, checked, is_baseline))
    builder = _Builder(PluginIndex(installed_plugins()))
    for document, checked, is_baseline in specs:
        builder.add(document, checked, baseline=is_baseline)
    problems += builder.problems
    if problems:
        order = {os.fspath(file): index for index, (file, _) in enumerate(files)}
        raise spec_error(sorted(problems, key=lambda p: (order[p.file], p.line or 0)))
    return builder.result()


@dataclass(frozen=True, slots=True)
class _Installed:
    """Where an entry was written, for the next entry naming the same middleware."""

    file: str
    line: int
    baseline: bool


class _Builder:
    """Builds the entries of the profile, then of the spec, collecting their problems."""

    def __init__(self, plugins: PluginIndex) -> None:
        self._plugins = plugins
        self._entries: list[PolicyEntry] = []
        self._installed: dict[str, _Installed] = {}
        self._budgets: dict[HookPoint, int] = {}
        self._blocked_message: str | None = None
        self._escalated_message: str | None = None
        self._problems: list[Problem] = []

    def add(self, document: Document, checked: CheckedSpec, *, baseline: bool) -> None:
        spec = checked.spec
        assert spec is not None  # the caller adds only what has a valid part
        for index, item in zip(checked.positions, spec.middleware, strict=True):
            self._add_entry(document, ("middleware", index), item, baseline=baseline)
        for hook, budget in spec.retry_budgets.items():
            if Retry in ALLOWED[hook]:
                self._budgets[hook] = budget
            else:
                retryable = [point.value for point in HookPoint if Retry in ALLOWED[point]]
                self._problems.append(
                    document.problem(
                        ("retry_budgets", hook.value),
                        f"{hook.value} allows {', '.join(allowed_names(hook))}, not Retry, "
                        f"so it has no retry budget (hook points with one: "
                        f"{', '.join(retryable)})",
                    )
                )
        if spec.blocked_message is not None:
            self._blocked_message = spec.blocked_message
        if spec.escalated_message is not None:
            self._escalated_message = spec.escalated_message

    @property
    def problems(self) -> list[Problem]:
        """The problems found in the entries, budgets and messages added so far."""
        return self._problems

    def result(self) -> PolicySpec:
        """What the files install; only without :attr:`problems`."""
        return PolicySpec(
            entries=tuple(self._entries),
            retry_budgets=MappingProxyType(dict(self._budgets)),
            blocked_message=self._blocked_message,
            escalated_message=self._escalated_message,
            sources=MappingProxyType(
                {name: f"{at.file}:{at.line}" for name, at in self._installed.items()}
            ),
        )

    def _add_entry(
        self, document: Document, path: DocPath, item: SpecEntry, *, baseline: bool
    ) -> None:
        use = (*path, "use")
        try:
            declared = resolve(item.use, self._plugins)
        except SpecError as error:
            self._problems.append(document.problem(use, str(error)))
            return
        name = declared.name
        if not self._first_time(document, path, name, baseline=baseline):
            return
        if declared.config is not None:
            settings = (*path, "settings")
            found = validate_settings(
                document, settings, declared.config, item.settings, name, _folder(document)
            )
            if found:
                self._problems += found
                return
        entry = self._build(document, path, declared, item, baseline=baseline)
        if entry is not None:
            self._entries.append(entry)

    def _first_time(self, document: Document, path: DocPath, name: str, *, baseline: bool) -> bool:
        first = self._installed.get(name)
        if first is None:
            self._installed[name] = _Installed(document.file, document.line_of(path), baseline)
            return True
        if first.baseline and not baseline:
            message = (
                f"middleware {name!r} is installed by the org baseline profile "
                f"({first.file}:{first.line}); an application spec cannot install it "
                "again, narrow, reconfigure or remove it"
            )
        else:
            message = (
                f"middleware {name!r} is already installed on line {first.line}; a spec "
                "installs each middleware once"
            )
        self._problems.append(document.problem((*path, "use"), message, name))
        return False

    def _build(
        self,
        document: Document,
        path: DocPath,
        declared: MiddlewareDef,
        item: SpecEntry,
        *,
        baseline: bool,
    ) -> PolicyEntry | None:
        try:
            return PolicyEntry(
                declared,
                band=item.band,
                hooks=None if item.hooks is None else tuple(dict.fromkeys(item.hooks)),
                settings=item.settings,
                fail_mode=item.fail_mode,
                timeout=item.timeout,
                baseline=baseline,
                settings_dir=_folder(document),
            )
        except SpecError as error:
            message = str(error)
        except PASSING:
            raise
        except BaseException as exc:  # a class middleware's __init__ is its author's code
            message = f"building middleware {declared.name!r} failed: {describe_failure(exc)}"
        self._problems.append(document.problem(path, message, declared.name))
        return None


def _folder(document: Document) -> Path:
    """The folder of the spec file *document* was read from: its settings' relative paths
    are relative to it, as an include or an import in any config file would be."""
    return Path(document.file).parent
