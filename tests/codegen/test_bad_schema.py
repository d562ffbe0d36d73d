"""A bad schema is reported as file:line: path: message, exits 2, and writes nothing."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from .conftest import Cli, Project


@dataclass(frozen=True)
class Case:
    """An edit to the schema and the error it must produce.

    The error must name the line of the ``nth`` line of the edited schema that contains
    ``line_at``, start with ``path`` and contain ``message``.
    """

    old: str
    new: str
    line_at: str
    path: str
    message: str
    nth: int = 1


CASES: dict[str, Case] = {
    "yaml_syntax": Case(
        "version: 1\n",
        "version: 1\nbroken: [unclosed\n",
        "payloads:",
        "",
        "expected ',' or ']'",
    ),
    "unknown_key": Case(
        "    interrupt:\n",
        "    interupt:\n",
        "interupt:",
        "stages.ExecuteTool.interupt",
        "unknown key 'interupt' (did you mean 'interrupt'?)",
    ),
    "missing_key": Case(
        "    result: ModelStopReason\n",
        "",
        "  InvokeModel:",
        "stages.InvokeModel.result",
        "missing required key 'result'",
    ),
    "unknown_type_name": Case(
        "        type: Messages\n        doc: Messages to send to the model.",
        "        type: Mesages\n        doc: Messages to send to the model.",
        "type: Mesages",
        "stages.InvokeModel.context.messages.type",
        "unknown type 'Mesages' (did you mean 'Messages'?)",
    ),
    "type_syntax": Case(
        "type: list[ToolSpec]\n        doc: Tool specifications",
        "type: list[ToolSpec\n        doc: Tool specifications",
        "type: list[ToolSpec",
        "stages.InvokeModel.context.tool_specs.type",
        "invalid type expression 'list[ToolSpec'",
    ),
    "dotted_type": Case(
        "type: int | None\n        doc: >-\n          Estimated",
        "type: typing.Optional[int]\n        doc: >-\n          Estimated",
        "typing.Optional",
        "stages.InvokeModel.context.projected_input_tokens.type",
        "dotted name 'typing.Optional' is not allowed",
    ),
    "invalid_identifier": Case(
        "      tool_specs:\n",
        "      tool-specs:\n",
        "tool-specs:",
        "stages.InvokeModel.context.tool-specs",
        "invalid field name 'tool-specs': expected a lower_snake_case identifier",
    ),
    "python_keyword": Case(
        "      projected_input_tokens:\n",
        "      lambda:\n",
        "lambda:",
        "stages.InvokeModel.context.lambda",
        "'lambda' is a Python keyword",
    ),
    "reserved_field": Case(
        "      projected_input_tokens:\n",
        "      isinstance:\n",
        "isinstance:",
        "stages.InvokeModel.context.isinstance",
        "'isinstance' is reserved",
    ),
    "duplicate_stage": Case(
        "  ExecuteTool:\n    doc: >-",
        "  InvokeModel:\n    doc: >-",
        "  InvokeModel:",
        "stages.InvokeModel",
        "duplicate key 'InvokeModel' (first defined on line",
        nth=2,
    ),
    "duplicate_field": Case(
        "      tool_specs:\n",
        "      messages:\n",
        "      messages:",
        "stages.InvokeModel.context.messages",
        "duplicate key 'messages' (first defined on line",
        nth=2,
    ),
    "result_not_in_events": Case(
        "    result: ModelStopReason\n",
        "    result: ModelMessageEvent\n",
        "result: ModelMessageEvent",
        "stages.InvokeModel.result",
        "result event 'ModelMessageEvent' is not in this stage's events",
    ),
    "unknown_stage_event": Case(
        "events: [ModelStreamChunkEvent, ModelStopReason]",
        "events: [ModelStreamChunk, ModelStopReason]",
        "events: [ModelStreamChunk,",
        "stages.InvokeModel.events[0]",
        "unknown event 'ModelStreamChunk' (did you mean 'ModelStreamChunkEvent'?)",
    ),
    "default_wrong_type": Case(
        "        default: 0\n",
        "        default: abc\n",
        "default: abc",
        "stages.InvokeModel.context.dynamic_trailing_blocks.default",
        "default 'abc' does not fit int",
    ),
    "default_null_not_optional": Case(
        "        default: 0\n",
        "        default: ~\n",
        "default: ~",
        "stages.InvokeModel.context.dynamic_trailing_blocks.default",
        "default None does not fit int",
    ),
    "default_payload_shape": Case(
        "        type: list[ToolSpec]\n        doc: Tool specifications available to the model.\n",
        "        type: list[ToolSpec]\n        doc: Tool specifications available to the model.\n"
        "        default: [{name: x}]\n",
        "default: [{name: x}]",
        "stages.InvokeModel.context.tool_specs.default",
        "missing required key 'description'",
    ),
    "doc_triple_quote": Case(
        "doc: Why the model stopped.}",
        'doc: \'Why """ stopped\'}',
        'Why """ stopped',
        "events.ModelStopReason.fields.stop_reason.doc",
        'docs may not contain \'"""\'',
    ),
    "doc_backslash": Case(
        "doc: Why the model stopped.}",
        "doc: 'Why \\ stopped'}",
        "Why \\ stopped",
        "events.ModelStopReason.fields.stop_reason.doc",
        "docs may not contain backslashes",
    ),
    "unknown_interrupt_placeholder": Case(
        "v2:middleware_agent_stream:{agent.agent_id}:{name_uuid}",
        "v2:middleware_agent_stream:{agent_id}:{name_uuid}",
        "{agent_id}",
        "stages.AgentStream.interrupt.id",
        "unknown interrupt-id placeholder {agent_id} (did you mean 'agent'?)",
    ),
    "interrupt_attribute_of_a_payload": Case(
        "{tool_use[toolUseId]}",
        "{tool_use.toolUseId}",
        "{tool_use.toolUseId}",
        "stages.ExecuteTool.interrupt.id",
        "placeholder {tool_use.toolUseId}: only a field of a host type can be read by attribute, "
        "not ToolUse (index payloads and dicts with [key])",
    ),
    "interrupt_key_not_in_payload": Case(
        "{tool_use[toolUseId]}",
        "{tool_use[toolUseID]}",
        "{tool_use[toolUseID]}",
        "stages.ExecuteTool.interrupt.id",
        "'toolUseID' is not a required key of ToolUse",
    ),
    "hook_unknown_stage": Case(
        "      stage: ExecuteTool\n      phase: Input",
        "      stage: ExecuteTol\n      phase: Input",
        "stage: ExecuteTol",
        "hooks.points['tool.before'].stage",
        "unknown stage 'ExecuteTol' (did you mean 'ExecuteTool'?)",
    ),
    "hook_unknown_direction": Case(
        "      phase: Input\n      direction: inbound\n      doc: A tool is about to run.",
        "      phase: Input\n      direction: inward\n      doc: A tool is about to run.",
        "direction: inward",
        "hooks.points['tool.before'].direction",
        "unknown direction 'inward'",
    ),
    "hook_bad_phase": Case(
        "      phase: Input\n      direction: inbound\n      doc: A tool is about to run.",
        "      phase: Before\n      direction: inbound\n      doc: A tool is about to run.",
        "phase: Before",
        "hooks.points['tool.before'].phase",
        "expected 'Input', 'Wrap' or 'Output', got 'Before'",
    ),
    "hook_event_clash": Case(
        "      event: ToolCallEvent\n",
        "      event: ToolUse\n",
        "event: ToolUse",
        "hooks.points['tool.before'].event",
        "hook event 'ToolUse' clashes with payload type 'ToolUse'",
    ),
    "hook_payload_not_json": Case(
        "agent_name: {type: str, doc: Name of the agent.}",
        "agent_name: {type: AgentHandle, doc: Name of the agent.}",
        "agent_name:",
        "hooks.points['run.start'].payload.agent_name.type",
        "hook payloads are JSON data; 'AgentHandle' is not",
    ),
    "hook_point_name": Case(
        "    tool.before:\n",
        "    Tool.Before:\n",
        "Tool.Before:",
        "hooks.points['Tool.Before']",
        "invalid hook point 'Tool.Before'",
    ),
    "hook_points_with_one_enum_member": Case(
        "    run.error:\n",
        "    run_end:\n",
        "    run.end:",
        "hooks.points['run.end']",
        "hook point 'run.end' would be the enum member HookPoint.RUN_END, like 'run_end'",
    ),
    "unhonoured_without_why": Case(
        "        replace: unhonoured\n        why: The signal",
        "        replace: unhonoured\n        doc2: The signal",
        "doc2:",
        "stages.ExecuteTool.context.cancel_signal.doc2",
        "unknown key 'doc2'",
    ),
    "event_name_clash": Case(
        "  ModelMessageEvent:\n",
        "  Message:\n",
        "  Message:",
        "events.Message",
        "event 'Message' clashes with payload type 'Message'",
    ),
    "event_named_like_a_stage_context": Case(
        "  ModelMessageEvent:\n",
        "  InvokeModelContext:\n",
        "  InvokeModel:",
        "stages.InvokeModel",
        "'InvokeModelContext' (generated for stage 'InvokeModel') clashes with event "
        "'InvokeModelContext'",
    ),
    "stage_names_that_generate_one_alias": Case(
        "  AgentStream:\n",
        "  InvokeModelAsync:\n",
        "  InvokeModelAsync:",
        "stages.InvokeModelAsync",
        "'InvokeModelAsyncInputHandler' (generated for stage 'InvokeModelAsync') clashes with "
        "'InvokeModelAsyncInputHandler' (generated for stage 'InvokeModel')",
    ),
    "event_field_named_like_a_mapping_method": Case(
        "      stop_reason: {type: StopReason, doc: Why the model stopped.}",
        "      get: {type: StopReason, doc: Why the model stopped.}",
        "get: {type: StopReason",
        "events.ModelStopReason.fields.get",
        "'get' is reserved on events",
    ),
    "reserved_type_name": Case(
        "  ModelMessageEvent:\n",
        "  MiddlewareStage:\n",
        "  MiddlewareStage:",
        "events.MiddlewareStage",
        "'MiddlewareStage' is reserved",
    ),
    "defaulted_event_field_order": Case(
        "      message: {type: Message, doc: The assistant message the model produced.}",
        "      message: {type: Message | None, doc: The assistant message., default: null}",
        "usage: {type: Usage",
        "events.ModelStopReason.fields.usage",
        "field without a default follows 'message'",
    ),
    "version_is_a_string": Case(
        "version: 1\n",
        "version: '1'\n",
        "version: '1'",
        "version",
        "must be the integer 1, got the string '1'",
    ),
    "version_is_another_integer": Case(
        "version: 1\n",
        "version: 2\n",
        "version: 2",
        "version",
        "must be the integer 1, got the integer 2",
    ),
    "copy_is_an_integer": Case(
        "        copy: deep\n",
        "        copy: 1\n",
        "copy: 1",
        "stages.InvokeModel.context.messages.copy",
        "expected 'deep', 'shallow', 'reference' or 'excluded', got the integer 1",
    ),
    "phase_is_a_yaml_boolean": Case(
        "      phase: Input\n      direction: inbound\n      doc: A tool is about to run.",
        "      phase: yes\n      direction: inbound\n      doc: A tool is about to run.",
        "phase: yes",
        "hooks.points['tool.before'].phase",
        "expected 'Input', 'Wrap' or 'Output', got the boolean true; quote the value",
    ),
    "replace_is_null": Case(
        "        replace: allowed\n",
        "        replace: null\n",
        "replace: null",
        "stages.InvokeModel.context.model.replace",
        "expected 'allowed', 'forbidden' or 'unhonoured', got null",
    ),
    "field_is_not_a_mapping": Case(
        "chunk: {type: StreamEvent, doc: The chunk as the model provider sent it.}",
        "chunk: 5",
        "chunk: 5",
        "events.ModelStreamChunkEvent.fields.chunk",
        "expected a mapping, got the integer 5",
    ),
    "interrupt_is_not_a_mapping": Case(
        '    interrupt:\n      id: "v2:middleware_agent_stream:{agent.agent_id}:{name_uuid}"',
        '    interrupt: "v2:middleware_agent_stream:{agent.agent_id}:{name_uuid}"',
        'interrupt: "v2:middleware_agent_stream',
        "stages.AgentStream.interrupt",
        "expected a mapping, got the string 'v2:middleware_agent_stream:{agent.ag...",
    ),
    "python_tag_on_a_mapping": Case(
        "  InvokeModel:\n    doc: >-",
        "  InvokeModel: !!python/object/apply:os.system\n    doc: >-",
        "!!python/object/apply",
        "stages.InvokeModel",
        "unsupported YAML tag 'tag:yaml.org,2002:python/object/apply:os.system' on a mapping",
    ),
    "custom_tag_on_a_sequence": Case(
        "events: [ModelStreamChunkEvent, ModelStopReason]",
        "events: !custom [ModelStreamChunkEvent, ModelStopReason]",
        "events: !custom",
        "stages.InvokeModel.events",
        "unsupported YAML tag '!custom' on a sequence",
    ),
    "merge_key": Case(
        "      model:\n        type: Model\n",
        "      model:\n        <<: {copy: reference}\n        type: Model\n",
        "<<:",
        "stages.InvokeModel.context.model",
        "YAML merge keys ('<<') are not supported",
    ),
    "why_on_a_replaceable_field": Case(
        "        copy: reference\n        replace: allowed\n",
        "        copy: reference\n        replace: allowed\n        why: Because.\n",
        "why: Because.",
        "stages.InvokeModel.context.model.why",
        "'why:' explains a field that replace() cannot set or that is excluded",
    ),
    "recursive_alias": Case(
        "version: 1\n",
        "version: 1\nloop: &loop [*loop]\n",
        "loop: &loop",
        "loop[0]",
        "a YAML alias refers to a collection that contains it",
    ),
    "exponential_aliases": Case(
        "version: 1\n",
        "version: 1\n"
        + "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(
            f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * 10)}]\n" for level in range(1, 7)
        ),
        "a4: &a4",
        "a4[7]",
        "the document expands to more than 100000 values once YAML aliases are resolved: "
        "alias *a3 (anchored on line 7) crosses the limit",
    ),
    "long_doc_repeated_through_aliases": Case(
        "events:\n",
        "events:\n  Huge:\n    doc: &long "
        + "x" * 1_000_000
        + "\n    fields:\n"
        + "".join(f"      f{number}: {{type: str, doc: *long}}\n" for number in range(60)),
        "f2: {type: str",
        "events.Huge.fields.f2.doc",
        "the document expands to more than 4000000 characters of text once YAML aliases are "
        "resolved: alias *long (anchored on line 27) crosses the limit",
    ),
    "control_character": Case(
        "doc: Why the model stopped.}",
        "doc: 'Why the \x07model stopped.'}",
        "Why the \x07model",
        "",
        "character U+0007 at column 53 is not allowed in YAML",
    ),
    "integer_with_too_many_digits": Case(
        "        default: 0\n",
        "        default: " + "1" * 5000 + "\n",
        "default: 1111",
        "stages.InvokeModel.context.dynamic_trailing_blocks.default",
        "the integer has too many digits",
    ),
    "deep_nesting": Case(
        "version: 1\n",
        "version: 1\ndeep: " + "[" * 3000 + "]" * 3000 + "\n",
        "deep: [[[",
        "",
        "collections are nested more than 64 levels deep",
    ),
    "huge_union_type": Case(
        "type: int | None\n        doc: >-\n          Estimated",
        "type: " + "int | " * 4999 + "int\n        doc: >-\n          Estimated",
        "type: int | int | int",
        "stages.InvokeModel.context.projected_input_tokens.type",
        "type expression is longer than 1000 characters",
    ),
    "deeply_nested_type": Case(
        "type: int | None\n        doc: >-\n          Estimated",
        "type: " + "list[" * 20 + "int" + "]" * 20 + "\n        doc: >-\n          Estimated",
        "type: list[list[",
        "stages.InvokeModel.context.projected_input_tokens.type",
        "type expression is nested more than 16 levels deep",
    ),
    "missing_payload_file": Case(
        "  - payloads/converse.schema.json",
        "  - payloads/missing.schema.json",
        "missing.schema.json",
        "payloads[0]",
        "cannot read payload file",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_schema_is_reported_and_nothing_is_written(
    name: str, project: Project, cli: Cli
) -> None:
    case = CASES[name]
    before = project.snapshot()
    project.edit(case.old, case.new)

    result = cli("generate")

    assert result.code == 2, result.err
    assert "Traceback" not in result.err
    line = project.line_of(case.line_at, case.nth)
    prefix = f"schema/stages.yaml:{line}: " + (f"{case.path}: " if case.path else "")
    reported = [error for error in result.err.splitlines() if error.startswith(prefix)]
    assert any(case.message in error for error in reported), result.err
    assert project.snapshot() == before


def test_several_problems_are_reported_in_one_run(project: Project, cli: Cli) -> None:
    project.edit("        copy: deep\n", "        copy: dep\n")
    project.edit("    interrupt:\n", "    interupt:\n")

    result = cli("check")

    assert result.code == 2
    lines = result.err.splitlines()
    assert len(lines) == 2, lines
    assert "(did you mean 'deep'?)" in lines[0]
    assert "unknown key 'interupt'" in lines[1]


def test_payload_file_errors_name_the_payload_file(project: Project, cli: Cli) -> None:
    path = project.root / "schema" / "payloads" / "converse.schema.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    document["$defs"]["Message"]["properties"]["role"] = {"$ref": "#/$defs/Rol"}
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    before = project.snapshot()

    result = cli("generate")

    assert result.code == 2
    assert result.err.startswith("schema/payloads/converse.schema.json:"), result.err
    assert "$defs.Message.properties.role.$ref: $ref '#/$defs/Rol' names no payload" in result.err
    assert project.snapshot() == before


def test_payload_json_syntax_error_names_its_line(project: Project, cli: Cli) -> None:
    path = project.root / "schema" / "payloads" / "converse.schema.json"
    path.write_text('{\n  "$defs": {\n    "A": {"type": "string",}\n  }\n}\n', encoding="utf-8")

    result = cli("generate")

    assert result.code == 2
    assert result.err.startswith("schema/payloads/converse.schema.json:3: "), result.err


def test_missing_schema_file_is_an_error_not_a_traceback(project: Project, cli: Cli) -> None:
    result = cli("generate", "--schema", "schema/nope.yaml")

    assert result.code == 2
    assert result.err.startswith("schema/nope.yaml:1: cannot read the schema"), result.err


def test_a_hand_written_file_in_the_output_is_never_overwritten(project: Project, cli: Cli) -> None:
    (project.output / "events.py").write_text("# mine\n", encoding="utf-8")
    before = project.snapshot()

    result = cli("generate")

    assert result.code == 2
    assert "was not generated by stageware" in result.err
    assert project.snapshot() == before


def test_a_misspelled_required_key_is_one_error(project: Project, cli: Cli) -> None:
    before = project.snapshot()
    project.edit("    result: ModelStopReason\n", "    reslt: ModelStopReason\n")

    result = cli("generate")

    assert result.code == 2
    line = project.line_of("reslt:")
    assert result.err.splitlines() == [
        f"schema/stages.yaml:{line}: stages.InvokeModel.reslt: "
        "unknown key 'reslt' (did you mean 'result'?)"
    ]
    assert project.snapshot() == before


def test_a_missing_payload_file_is_the_only_error(project: Project, cli: Cli) -> None:
    before = project.snapshot()
    project.edit("  - payloads/converse.schema.json", "  - payloads/missing.schema.json")

    result = cli("generate")

    assert result.code == 2
    assert len(result.err.splitlines()) == 1, result.err
    assert "cannot read payload file" in result.err
    assert project.snapshot() == before


def test_a_payload_name_the_generator_reserves_is_reported_in_its_file(
    project: Project, cli: Cli
) -> None:
    before = project.snapshot()
    path = project.root / "schema" / "payloads" / "converse.schema.json"
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace('"$defs": {\n', '"$defs": {\n    "Final": {"type": "string"},\n', 1),
        encoding="utf-8",
    )
    line = next(
        number
        for number, content in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if '"Final"' in content
    )

    result = cli("generate")

    assert result.code == 2
    assert "Traceback" not in result.err
    assert result.err.splitlines() == [
        f"schema/payloads/converse.schema.json:{line}: $defs.Final: "
        "'Final' is reserved: the generated code imports it from typing"
    ]
    assert project.snapshot() == before


def test_hook_points_that_differ_only_in_where_the_dot_is_clash(project: Project, cli: Cli) -> None:
    before = project.snapshot()
    project.edit("    run.error:\n", "    run.x_end:\n")
    project.edit("    run.end:\n", "    run_x.end:\n")

    result = cli("generate")

    assert result.code == 2
    line = project.line_of("run_x.end:")
    assert result.err.splitlines() == [
        f"schema/stages.yaml:{line}: hooks.points['run_x.end']: hook point 'run_x.end' would "
        "be the enum member HookPoint.RUN_X_END, like 'run.x_end'; rename one of them"
    ]
    assert project.snapshot() == before


def test_a_deeply_nested_payload_file_is_an_error_not_a_traceback(
    project: Project, cli: Cli
) -> None:
    before = project.snapshot()
    path = project.root / "schema" / "payloads" / "converse.schema.json"
    path.write_text('{\n  "$defs": ' + "[" * 3000 + "]" * 3000 + "\n}\n", encoding="utf-8")

    result = cli("generate")

    assert result.code == 2
    assert "Traceback" not in result.err
    assert result.err.startswith("schema/payloads/converse.schema.json:2: "), result.err
    assert "nested more than 64 levels deep" in result.err
    assert project.snapshot() == before
