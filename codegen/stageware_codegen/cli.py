"""The ``stageware`` command line (``python -m stageware_codegen.cli`` runs it too).

Subcommands are small functions registered in :data:`_COMMANDS`; each declares its own
arguments, so a new subcommand is one function and one entry.

It lives in the generator's package, outside the ``stageware`` package, on purpose: the
command that regenerates ``stageware._generated`` must work when that package is broken,
so it must not depend on importing it. Only ``demo``, ``policy`` and ``console`` import
the agent (and with it the generated code), when they run; ``--version`` reads
``stageware.__version__``, which loads nothing else. The generator itself is imported on
first use too: it needs the ``codegen`` extra, and ``stageware demo`` must run with the
runtime's dependencies alone.
Importing this module loads none of the extra's packages.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from stageware import __version__
from stageware._extras import needs_extra

from ._errors import InvalidSchemaError, OutputError, SchemaError
from ._project import ConfigError, ProjectConfig, find_config, relative_path
from ._shipped_schema import SCHEMA_FILE, export_schema

__all__ = ["main"]

EXIT_OK = 0
EXIT_STALE = 1
EXIT_ERROR = 2

_CODEGEN_MODULES = frozenset({"jinja2", "yaml", "datamodel_code_generator", "ruff"})


@dataclass(frozen=True, slots=True)
class _Command:
    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


class _UsageError(Exception):
    """A problem with the command line or the project configuration."""


def _missing_extra(exc: ImportError) -> Exception:
    """A clear message when the codegen extra is not installed; other errors unchanged."""
    if exc.name is not None and exc.name.split(".")[0] in _CODEGEN_MODULES:
        return _UsageError(f"the generator needs {needs_extra('codegen')} ({exc.name} is missing)")
    return exc


def _resolve_paths(args: argparse.Namespace) -> tuple[Path, Path]:
    """Schema and output from the command line, else from ``[tool.stageware]``.

    The configuration is that of the ``pyproject.toml`` nearest the working directory;
    configured paths are relative to that file.
    """
    schema: str | None = args.schema
    output: str | None = args.output
    config: ProjectConfig | None = None
    if schema is None or output is None:
        try:
            config = find_config(Path.cwd())
        except ConfigError as exc:
            raise _UsageError(str(exc)) from None

    def pick(key: str, given: str | None, configured: Path | None) -> Path:
        if given is not None:
            return Path(given)
        if configured is None:
            raise _UsageError(
                f"no {key} given: pass --{key} or set {key} under [tool.stageware] "
                "in pyproject.toml"
            )
        return configured

    return (
        pick("schema", schema, None if config is None else config.schema),
        pick("output", output, None if config is None else config.output),
    )


def _print_schema_errors(errors: Sequence[SchemaError]) -> int:
    for error in errors:
        print(error, file=sys.stderr)
    return EXIT_ERROR


def _schema_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--schema", help="stage schema YAML (default: [tool.stageware] schema)")
    parser.add_argument(
        "--output", help="package directory to generate (default: [tool.stageware] output)"
    )


def _generate_arguments(parser: argparse.ArgumentParser) -> None:
    _schema_arguments(parser)
    parser.add_argument(
        "--force",
        action="store_true",
        help=(
            "generate even into a directory that holds another schema's generated package "
            "or files stageware did not generate (those files are never overwritten)"
        ),
    )


def _report_recovered(output: Path, recovered: Sequence[str]) -> None:
    if recovered:
        print(
            f"stageware: {relative_path(output, Path.cwd())}: finished a write that was "
            f"interrupted ({', '.join(recovered)})",
            file=sys.stderr,
        )


def _run_generate(args: argparse.Namespace) -> int:
    try:
        from ._pipeline import generate
    except ImportError as exc:
        raise _missing_extra(exc) from None
    schema, output = _resolve_paths(args)
    force: bool = args.force
    try:
        report = generate(schema, output, force=force)
    except InvalidSchemaError as exc:
        return _print_schema_errors(exc.errors)
    except OutputError as exc:
        raise _UsageError(str(exc)) from None
    _report_recovered(output, report.recovered)
    print(
        f"{relative_path(output, Path.cwd())}: {len(report.written)} written, "
        f"{len(report.unchanged)} unchanged, {len(report.removed)} removed"
    )
    return EXIT_OK


def _run_check(args: argparse.Namespace) -> int:
    try:
        from ._pipeline import check
    except ImportError as exc:
        raise _missing_extra(exc) from None
    schema, output = _resolve_paths(args)
    try:
        report = check(schema, output)
    except InvalidSchemaError as exc:
        return _print_schema_errors(exc.errors)
    except OutputError as exc:
        raise _UsageError(str(exc)) from None
    _report_recovered(output, report.recovered)
    shown = relative_path(output, Path.cwd())
    if report.up_to_date:
        print(f"{shown} is up to date")
        return EXIT_OK
    if report.changes:
        print(*report.changes, sep="\n", end="\n\n")
    sys.stdout.write(report.diff)
    print(f"{shown} is stale: run `{_generate_command(args)}`", file=sys.stderr)
    return EXIT_STALE


def _generate_command(args: argparse.Namespace) -> str:
    """The `generate` command with the options this command was given, for this cwd."""
    words = ["stageware", "generate"]
    for option in ("schema", "output"):
        value: str | None = getattr(args, option)
        if value is not None:
            words += [f"--{option}", value]
    return shlex.join(words)


def _schema_command_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    export = actions.add_parser(
        "export",
        help="write the shipped stage schema and its payload JSON Schema into DIR",
        description=(
            "Write the stage schema stageware ships (stages.yaml, its payload JSON Schema "
            "and the README on the format) into DIR, to extend for a harness of your own. "
            "Files already there with other content are never overwritten."
        ),
    )
    export.add_argument("directory", metavar="DIR", type=Path)


def _run_schema_command(args: argparse.Namespace) -> int:
    # `export` is the only action so far; argparse refused anything else.
    directory: Path = args.directory
    try:
        report = export_schema(directory)
    except OSError as exc:
        raise _UsageError(str(exc)) from None
    shown = relative_path(directory, Path.cwd())
    print(f"{shown}: {len(report.written)} written, {len(report.unchanged)} unchanged")
    schema = shlex.quote(f"{shown}/{SCHEMA_FILE}")
    print(f"generate from it with: stageware generate --schema {schema} --output PACKAGE_DIR")
    return EXIT_OK


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    # The names of stageware._demo.STORIES, which is not imported until the demo runs.
    parser.add_argument(
        "story",
        nargs="?",
        choices=("middleware", "policy"),
        default="middleware",
        help=(
            "middleware (the default): typed stage middleware around a support agent; "
            "policy: a refund desk under a policy spec and an org baseline profile "
            "(needs the policy extra)"
        ),
    )
    parser.add_argument(
        "--session-dir",
        type=Path,
        help=(
            "keep the demo's SQLite session file here (default: a temporary directory); "
            "each run starts the demo's session over"
        ),
    )


def _run_demo(args: argparse.Namespace) -> int:
    # Imported here: the demo imports the agent and the generated package, which
    # `generate` must not.
    from stageware._demo import STORIES, DemoCheckError

    story: str = args.story
    session_dir: Path | None = args.session_dir
    if session_dir is not None and not session_dir.is_dir():
        raise _UsageError(f"--session-dir {session_dir}: not a directory")
    command = "stageware demo" if story == "middleware" else f"stageware demo {story}"
    try:
        STORIES[story](sys.stdout, session_dir)
    except DemoCheckError as exc:
        print(f"{command}: check failed: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except ImportError as exc:
        # The policy story reads its spec with PyYAML, from the policy extra;
        # load_policy's message names the extra.
        if exc.name != "yaml":
            raise
        raise _UsageError(f"{command}: {exc}") from None
    return EXIT_OK


def _policy_arguments(parser: argparse.ArgumentParser) -> None:
    # Declaring their arguments imports nothing but argparse.
    from stageware._cli import _policy_approvals, _policy_check, _policy_escalations

    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, module in (
        ("check", _policy_check),
        ("escalations", _policy_escalations),
        ("approvals", _policy_approvals),
    ):
        action = actions.add_parser(name, help=module.HELP, description=module.DESCRIPTION)
        module.configure(action)
        action.set_defaults(policy_run=module.run)


def _console_arguments(parser: argparse.ArgumentParser) -> None:
    # Declaring its arguments imports nothing but argparse.
    from stageware._cli import _console

    _console.configure(parser)


def _run_console(args: argparse.Namespace) -> int:
    # The console imports Starlette and the session stores when it runs.
    from stageware._cli import _console

    return _console.run(args, sys.stdout, sys.stderr)


def _run_policy(args: argparse.Namespace) -> int:
    # Each action imports the policy layer or the session stores (and the generated code)
    # when it runs, which `generate` must not.
    run: Callable[[argparse.Namespace, TextIO, TextIO], int] = args.policy_run
    return run(args, sys.stdout, sys.stderr)


def _cedar_arguments(parser: argparse.ArgumentParser) -> None:
    # Declaring its arguments imports nothing but argparse (not cedarpy).
    from stageware._cli import _cedar_schema

    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    action = actions.add_parser(
        "schema", help=_cedar_schema.HELP, description=_cedar_schema.DESCRIPTION
    )
    _cedar_schema.configure(action)
    action.set_defaults(policy_run=_cedar_schema.run)


_COMMANDS: tuple[_Command, ...] = (
    _Command(
        "demo",
        "run an agent on a scripted model through typed middleware, with a trace",
        _demo_arguments,
        _run_demo,
    ),
    _Command(
        "generate",
        "generate the typed surface from the stage schema",
        _generate_arguments,
        _run_generate,
    ),
    _Command(
        "check",
        "exit 1 with a diff if the generated code is stale",
        _schema_arguments,
        _run_check,
    ),
    _Command(
        "schema",
        "the shipped stage schema: `schema export DIR` writes it out to extend",
        _schema_command_arguments,
        _run_schema_command,
    ),
    _Command(
        "policy",
        "policy specs and operations: `policy check POLICY_YAML` validates a spec; "
        "`policy escalations` and `policy approvals` work a session store's queues",
        _policy_arguments,
        _run_policy,
    ),
    _Command(
        "console",
        "serve the approvals and escalations web console for a session store",
        _console_arguments,
        _run_console,
    ),
    _Command(
        "cedar",
        "Cedar policies: `cedar schema --tools MODULE:ATTRIBUTE` prints the schema they are "
        "validated against",
        _cedar_arguments,
        _run_policy,
    ),
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stageware", description="Typed middleware around AI-agent stages."
    )
    parser.add_argument("--version", action="version", version=f"stageware {__version__}")
    subcommands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in _COMMANDS:
        sub = subcommands.add_parser(command.name, help=command.help, description=command.help)
        command.configure(sub)
        sub.set_defaults(run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 ok, 1 stale, 2 error)."""
    args = _parser().parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except _UsageError as exc:
        print(f"stageware: {exc}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
