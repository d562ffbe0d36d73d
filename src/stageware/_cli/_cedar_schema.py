"""``stageware cedar schema``: print the Cedar schema a Cedar policy is validated against.

Policy authors validate and test their policies with Cedar's own tools; this gives them
the schema ``stageware.cedar.cedar_policy`` uses, for the agent's tools, as JSON. Exit
status 0, or 2 with one line naming the problem (a tool reference that names nothing, an
attributes file that is not a JSON Schema object). Importing this module loads nothing of
the policy layer.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO, cast

__all__ = ["DESCRIPTION", "HELP", "configure", "run"]

HELP = "print the Cedar schema of the Cedar policy middleware, for the agent's tools"
DESCRIPTION = (
    "Print, as Cedar's JSON schema format, the schema stageware.cedar validates Cedar "
    "policies against: the entity types, one action per tool and per decision, and the "
    "contexts typed from the stage schema's hook events and the tools' input schemas. "
    "`package.module:attribute` is imported with the current directory on the module "
    "search path. Needs the cedar extra (pip install -e '.[cedar]' in a clone)."
)

EXIT_OK = 0
EXIT_INVALID = 2


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the command's arguments on *parser*."""
    parser.add_argument(
        "--tools",
        metavar="MODULE:ATTRIBUTE",
        help="a list of the agent's tools (or their tool_spec dictionaries)",
    )
    parser.add_argument(
        "--principal-attributes",
        metavar="JSON_FILE",
        type=Path,
        help="a JSON Schema object of the attributes the application gives its Principal",
    )


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print the schema *args* ask for on *out*; problems on *err*. Return the exit status."""
    try:
        from stageware.cedar import schema_for
    except ImportError as error:
        print(f"stageware cedar schema: {error}", file=err)
        return EXIT_INVALID
    # As `python -m` would: the project's own modules are named relative to where it runs.
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    tools: str | None = args.tools
    attributes_file: Path | None = args.principal_attributes
    try:
        attributes: dict[str, Any] | None = None
        if attributes_file is not None:
            loaded: object = json.loads(attributes_file.read_text(encoding="utf-8"))
            if not isinstance(loaded, dict):
                raise ValueError(f"{attributes_file}: not a JSON object")
            attributes = cast(dict[str, Any], loaded)
        schema = schema_for(tools if tools is not None else (), principal_attributes=attributes)
    except (OSError, ValueError, TypeError) as error:
        print(f"stageware cedar schema: {error}", file=err)
        return EXIT_INVALID
    print(json.dumps(schema, indent=2, sort_keys=True), file=out)
    return EXIT_OK
