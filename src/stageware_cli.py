"""The ``stageware`` command line.

Subcommands are small functions registered in :data:`_COMMANDS`; each declares its own
arguments, so a new subcommand is one function and one entry. The generator is imported
lazily: it needs the ``codegen`` extra, which the runtime does not. This module lives
outside the ``stageware`` package on purpose: importing that package imports the
generated code, and the command that regenerates it must work when it is broken.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["main"]

EXIT_OK = 0
EXIT_STALE = 1
EXIT_ERROR = 2

_CODEGEN_MODULES = frozenset({"jinja2", "yaml", "datamodel_code_generator"})


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
        return _UsageError(
            f"the generator needs the codegen extra ({exc.name} is missing): "
            "pip install 'stageware[codegen]'"
        )
    return exc


def _resolve_paths(args: argparse.Namespace) -> tuple[Path, Path]:
    """Schema and output from the command line, else from ``[tool.stageware]``.

    The configuration is that of the ``pyproject.toml`` nearest the working directory;
    configured paths are relative to that file. Call only once the generator imported.
    """
    from stageware_codegen import ConfigError, ProjectConfig, find_config

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


def _print_schema_errors(errors: Sequence[object]) -> int:
    for error in errors:
        print(error, file=sys.stderr)
    return EXIT_ERROR


def _schema_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--schema", help="stage schema YAML (default: [tool.stageware] schema)")
    parser.add_argument(
        "--output", help="package directory to generate (default: [tool.stageware] output)"
    )


def _run_generate(args: argparse.Namespace) -> int:
    try:
        import stageware_codegen as codegen
    except ImportError as exc:
        raise _missing_extra(exc) from None
    schema, output = _resolve_paths(args)
    try:
        report = codegen.generate(schema, output)
    except codegen.InvalidSchemaError as exc:
        return _print_schema_errors(exc.errors)
    except codegen.OutputError as exc:
        raise _UsageError(str(exc)) from None
    print(
        f"{codegen.relative_path(output, Path.cwd())}: {len(report.written)} written, "
        f"{len(report.unchanged)} unchanged, {len(report.removed)} removed"
    )
    return EXIT_OK


def _run_check(args: argparse.Namespace) -> int:
    try:
        import stageware_codegen as codegen
    except ImportError as exc:
        raise _missing_extra(exc) from None
    schema, output = _resolve_paths(args)
    try:
        report = codegen.check(schema, output)
    except codegen.InvalidSchemaError as exc:
        return _print_schema_errors(exc.errors)
    except codegen.OutputError as exc:
        raise _UsageError(str(exc)) from None
    shown = codegen.relative_path(output, Path.cwd())
    if report.up_to_date:
        print(f"{shown} is up to date")
        return EXIT_OK
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


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--session-dir",
        type=Path,
        help=(
            "keep the demo's SQLite session file here (default: a temporary directory); "
            "each run starts the demo's session over"
        ),
    )


def _run_demo(args: argparse.Namespace) -> int:
    # Imported here: the demo imports the stageware package, which `generate` must not.
    from stageware._demo import DemoCheckError, run_demo

    session_dir: Path | None = args.session_dir
    if session_dir is not None and not session_dir.is_dir():
        raise _UsageError(f"--session-dir {session_dir}: not a directory")
    try:
        run_demo(sys.stdout, session_dir)
    except DemoCheckError as exc:
        print(f"stageware demo: check failed: {exc}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


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
        _schema_arguments,
        _run_generate,
    ),
    _Command(
        "check",
        "exit 1 with a diff if the generated code is stale",
        _schema_arguments,
        _run_check,
    ),
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stageware", description="Typed middleware around AI-agent stages."
    )
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
