"""The body and options of a chat-completions request, encoded once per part that can change.

``openai``'s ``chat.completions.create`` runs its parameter transform over every message of
the history on every request, which makes a growing conversation cost O(n²) in the
client alone. The adapter already holds plain JSON data (``_openai_convert`` builds it),
so :class:`RequestEncoder` writes the body itself and ``_openai`` posts the bytes through
the client's ``post()``, which keeps ``openai``'s headers, retries, timeouts, error types
and chunk type.

The bytes are those ``create`` would send: the same fields in the same order, merged with
``extra_body`` the way ``openai`` merges it, encoded as ``openai`` encodes JSON (UTF-8, no
spaces, no NaN). What cannot change between calls (the model, ``params``) is encoded
when the model is built; the tool list is encoded again only when it changed.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any, Final, final

import openai
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolChoiceOptionParam
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming

from stageware._generated.payloads import ToolSpec

from ._openai_convert import convert_tool_specs

__all__ = ["RequestEncoder"]

# Arguments of `create` that shape the request rather than its body.
_OPTION_PARAMS: Final = frozenset({"extra_headers", "extra_query", "extra_body", "timeout"})
# Body fields of a streaming `create`, in the order `create` writes them: these four
# first, then the rest in the order the params type declares them.
_LEADING: Final = ("model", "stream", "service_tier", "messages")
_BODY_ORDER: Final = (
    *_LEADING,
    *(name for name in CompletionCreateParamsStreaming.__annotations__ if name not in _LEADING),
)
_BODY_FIELDS: Final = frozenset(_BODY_ORDER)
# As `openai` encodes a body: UTF-8 rather than escapes, no spaces, no NaN.
_ENCODER: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
# The fields a call may set; the rest are the same on every call. A structured run's
# `response_format` replaces the one `params` may set for plain runs.
_PER_CALL: Final = frozenset({"messages", "tools", "tool_choice", "response_format"})


@final
class RequestEncoder:
    """Encodes the requests of one model: its fixed fields once, the tool list when it changes.

    Raises ``ValueError`` when built with *params* that ``create`` would not take or that
    are not JSON data, naming the parameter.
    """

    __slots__ = ("_extra", "_fixed", "_layout", "_tools", "options")

    def __init__(self, model_id: str, params: Mapping[str, Any]) -> None:
        unknown = sorted(set(params) - _BODY_FIELDS - _OPTION_PARAMS)
        if unknown:
            raise ValueError(
                f"params has {unknown}, which chat.completions.create does not take; "
                "pass server-specific fields in params['extra_body']"
            )
        given = {name: value for name, value in params.items() if _is_given(value)}
        fixed: dict[str, Any] = {
            "model": model_id,
            "stream": True,
            "stream_options": {"include_usage": True},
            **{name: value for name, value in given.items() if name in _BODY_FIELDS},
        }
        self._fixed = {name: _field(name, value, "params field") for name, value in fixed.items()}
        # The fields of a body in `create`'s order: a fixed one, or one a call fills in.
        self._layout = tuple(
            name for name in _BODY_ORDER if name in self._fixed or name in _PER_CALL
        )
        extra_body: Mapping[str, Any] = given.get("extra_body") or {}
        self._extra = {
            name: _field(name, value, "extra_body field")
            for name, value in extra_body.items()
            if _is_given(value)
        }
        self.options = _request_options(given)
        """The request options (``extra_headers``, ``extra_query``, ``timeout``) for ``post()``."""
        # The last tool list encoded, as it was then (a copy: a list changed in place
        # must not match itself), and its encoding. One attribute, replaced whole: a
        # model serving agents in several threads must never pair one list with
        # another's encoding.
        self._tools: tuple[list[ToolSpec], bytes] | None = None

    def encode(
        self,
        messages: list[ChatCompletionMessageParam],
        tool_specs: list[ToolSpec] | None,
        tool_choice: ChatCompletionToolChoiceOptionParam | None,
        response_format: Mapping[str, Any] | None = None,
    ) -> bytes:
        """The body of one request, as ``create`` would encode it.

        *tool_specs* are Converse tool specs (converted here, and only when they differ
        from the previous call's); ``None`` or an empty list sends no tools and no tool
        choice, as servers reject a tool choice without tools. *response_format*, when
        given, replaces any ``response_format`` of ``params``.
        """
        per_call: dict[str, bytes] = {"messages": _field("messages", messages, "request field")}
        if response_format is not None:
            per_call["response_format"] = _field(
                "response_format", response_format, "request field"
            )
        if tool_specs:
            per_call["tools"] = self._encoded_tools(tool_specs)
            if tool_choice is not None:
                per_call["tool_choice"] = _field("tool_choice", tool_choice, "request field")
        fields: dict[str, bytes] = {}
        for name in self._layout:
            encoded = per_call.get(name) or self._fixed.get(name)
            if encoded is not None:
                fields[name] = encoded
        # As `openai` merges `extra_body`: a field it names is replaced where it stands.
        fields.update(self._extra)
        return b"{" + b",".join(fields.values()) + b"}"

    def _encoded_tools(self, tool_specs: list[ToolSpec]) -> bytes:
        # Comparing with the copy costs a fraction of converting and encoding the list
        # again, which with a few hundred tools would dominate the request.
        cached = self._tools
        if cached is not None and cached[0] == tool_specs:
            return cached[1]
        encoded = _field("tools", convert_tool_specs(tool_specs), "request field")
        self._tools = (copy.deepcopy(tool_specs), encoded)
        return encoded


def _field(name: str, value: object, what: str) -> bytes:
    """``"name":value`` as ``openai`` encodes a JSON body; *what* names the field in errors."""
    try:
        encoded = _ENCODER.encode(value)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{what} {name!r} is not JSON data: {error}") from None
    return f"{json.dumps(name)}:{encoded}".encode()


def _is_given(value: object) -> bool:
    # `openai.omit` and `openai.not_given` stand for an argument left out.
    return not isinstance(value, openai.Omit | openai.NotGiven)


def _request_options(params: Mapping[str, Any]) -> openai.RequestOptions:
    options: openai.RequestOptions = {"security": {"bearer_auth": True}}
    if params.get("extra_headers") is not None:
        options["headers"] = params["extra_headers"]
    if params.get("extra_query") is not None:
        options["params"] = params["extra_query"]
    if "timeout" in params:
        options["timeout"] = params["timeout"]
    return options
