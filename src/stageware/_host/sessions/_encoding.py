"""Session snapshots as JSON documents: encoded faithfully, decoded and checked.

Shared by every store, so swapping one store for another never changes what an agent may
save: a snapshot is plain JSON data, checked on the way in and on the way out, and nothing
that only seemed to be stored (a tuple, a set, an object) gets through, nor anything a
hand-edited or damaged record could slip past.

A snapshot is stored in pieces, so that a save writes only the messages it brings: the
*document* (the snapshot without its messages: its version, state, model state and
interrupt state) and one JSON document per message, kept by its position in the history.
``split_document`` cuts a whole-snapshot document of an older store format into those
pieces, for the stores' migrations.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn, cast, final

from stageware._data_paths import format_path

from ._store import SNAPSHOT_VERSION, SessionError, SessionSnapshot

if TYPE_CHECKING:
    import pydantic

__all__ = [
    "EncodedSnapshot",
    "decode_snapshot",
    "encode_snapshot",
    "json_problem",
    "split_document",
]


@final
@dataclass(frozen=True, slots=True)
class EncodedSnapshot:
    """A snapshot as a store writes it.

    Attributes:
        document: The snapshot without its messages, as a JSON document.
        messages: One JSON document per message the snapshot brings, in order.
    """

    document: str
    messages: list[str]

    @property
    def size(self) -> int:
        """The bytes of the documents (ASCII: the encoder escapes everything else)."""
        return len(self.document) + sum(map(len, self.messages))


def json_problem(value: object, name: str) -> str | None:
    """Say why *value* is not faithful JSON data, or return ``None`` if it is.

    *name* is how the caller writes *value* (``agent.state['tags']``); the answer names
    the first offending value below it (``"agent.state['tags'][1] is a set, ..."``), so an
    error raised where the value is set can say exactly what to change.
    """
    try:
        document = json.dumps(value, allow_nan=False, default=_refuse_object)
        if json.loads(document) == value:
            return None
    except (TypeError, ValueError, RecursionError):
        pass
    return _explain_non_json(value, root=name, inside=True)


def encode_snapshot(
    snapshot: SessionSnapshot, session_id: str, where: str, *, first_message: int = 0
) -> EncodedSnapshot:
    """Encode *snapshot* for a store, or raise ``SessionError`` naming the bad value.

    *where* names the store in messages. Stricter than ``json.dumps``: a tuple or a
    non-string dict key is refused too, because it would load back as something else (a
    list, a string key) and a resumed run would not see what the first one saved. The
    cost is that of the messages *snapshot* brings, which a save that appends keeps small.
    *first_message* is the place in the history of the snapshot's first message (the
    save's ``kept_messages``), so that an error names a message where the history has it.
    """
    plain = _decoded_copy(snapshot)
    if plain is None:
        problem = _explain_non_json(snapshot, first_message=first_message)
        raise SessionError(
            f"cannot save session {session_id!r} in {where}: {problem}; nothing was written"
        )
    _check_shape(
        plain,
        f"cannot save session {session_id!r} in {where}: ",
        "; nothing was written",
        stored=False,
        first_message=first_message,
    )
    # Encoded again in pieces: the checks above see the snapshot whole, as it is loaded.
    rest = dict(cast(dict[str, object], plain))
    messages = cast(list[object], rest.pop("messages"))
    return EncodedSnapshot(_dumps(rest), [_dumps(message) for message in messages])


def _decoded_copy(snapshot: SessionSnapshot) -> object | None:
    """Return the decoded copy of *snapshot*'s JSON, or ``None`` if it differs."""
    try:
        plain: object = json.loads(_dumps(snapshot))
    except (TypeError, ValueError, RecursionError):
        return None
    # Comparing with the decoded copy catches, in C, every value that json.dumps accepts
    # but changes (tuples, int keys); the slow walk in _find_non_json only runs to explain
    # a failure.
    return plain if plain == snapshot else None


def _dumps(value: object) -> str:
    # ensure_ascii (the default) escapes lone surrogates, which are valid in a Python
    # str but cannot be written to SQLite as UTF-8.
    return json.dumps(value, allow_nan=False, separators=(",", ":"), default=_refuse_object)


def decode_snapshot(
    document: object,
    messages: Sequence[tuple[object, object]],
    message_count: object,
    session_id: str,
    where: str,
) -> SessionSnapshot:
    """Decode and check a stored snapshot; a damaged one is a ``SessionError``.

    *document* is the snapshot without its messages; *messages* are the stored messages
    as (position, document) pairs in the order of their positions, and *message_count* is
    how many the session's record says it has, so that a lost or stray row is caught.

    The decoded data itself is returned, not pydantic's copy of it: pydantic drops keys a
    TypedDict does not declare, and the store must hand back everything it was given.
    """

    prefix = f"session {session_id!r} in {where} is damaged: "

    def fail(problem: str) -> NoReturn:
        raise SessionError(prefix + problem)

    plain = _decode(document, "the stored document", fail)
    if type(message_count) is not int or [p for p, _ in messages] != list(range(message_count)):
        fail(
            f"its record says it has {message_count!r} messages, but the stored messages are "
            f"at positions {_describe_positions([p for p, _ in messages])}"
        )
    if isinstance(plain, dict):
        head = cast(dict[str, object], plain)
        if "messages" in head:
            fail("the stored document holds messages, which are stored one by one")
        decoded = [_decode(text, f"stored message {position}", fail) for position, text in messages]
        # In the order a snapshot is written, so that a loaded snapshot reads as it was saved.
        plain = {"version": head.get("version"), "messages": decoded, **head}
        if "version" not in head:
            del plain["version"]
    _check_shape(plain, prefix, stored=True)
    return cast(SessionSnapshot, plain)


def _decode(text: object, name: str, fail: Callable[[str], NoReturn]) -> object:
    if not isinstance(text, str | bytes):
        fail(f"{name} is {_describe_type(text)}, not JSON text")
    try:
        return cast(object, json.loads(text, parse_constant=_refuse_constant))
    except RecursionError:
        fail(f"{name} is nested too deeply to read")
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, NaN and Infinity
        fail(f"{name} is not valid JSON ({exc})")


def _describe_positions(positions: list[object]) -> str:
    if len(positions) > 6:
        shown = ", ".join(map(repr, positions[:3])) + ", ..., " + repr(positions[-1])
    else:
        shown = ", ".join(map(repr, positions))
    return f"[{shown}]"


def split_document(document: object) -> EncodedSnapshot | None:
    """Cut a whole snapshot's document, as older store formats kept it, into its pieces.

    Returns ``None`` for a document that is not a JSON object with a list of messages:
    a store's migration leaves that one as it was, and loading it reports the damage.
    """
    try:
        plain: object = json.loads(cast(str, document), parse_constant=_refuse_constant)
        if not isinstance(plain, dict):
            return None
        rest = dict(cast(dict[str, object], plain))
        messages = rest.pop("messages", None)
        if not isinstance(messages, list):
            return None
        return EncodedSnapshot(
            _dumps(rest), [_dumps(message) for message in cast(list[object], messages)]
        )
    except (TypeError, ValueError, RecursionError):
        return None


def _check_shape(
    plain: object, prefix: str, suffix: str = "", *, stored: bool, first_message: int = 0
) -> None:
    """Check that decoded JSON *plain* is a snapshot of the current version.

    A problem is raised as ``SessionError(prefix + problem + suffix)``; *stored* says
    whether *plain* was read from a store or is about to be written to one, and
    *first_message* is the place in the history of its first message.
    """

    def message(problem: str) -> str:
        return prefix + problem + suffix

    if not isinstance(plain, dict):
        raise SessionError(message(f"the snapshot is {_describe_type(plain)}, not a JSON object"))
    # The version comes first, and by itself, so that a snapshot from another stageware
    # reads as what it is rather than as a list of fields that happen not to match.
    version = cast(dict[str, object], plain).get("version")
    if type(version) is int and version != SNAPSHOT_VERSION:
        if not stored:
            problem = f"snapshot format version {version}; this stageware writes version"
        elif version > SNAPSHOT_VERSION:
            problem = (
                f"snapshot format version {version} (written by a newer stageware?); "
                "this stageware reads version"
            )
        else:
            problem = f"snapshot format version {version}; this stageware reads version"
        raise SessionError(message(f"{problem} {SNAPSHOT_VERSION}"))
    # pydantic loads with the first snapshot checked, not with stageware.
    import pydantic

    try:
        # Strict: decoded JSON never needs coercing, and a lax "1" for 1 would be returned
        # as the string it is, since the caller gets the decoded data, not pydantic's copy.
        _snapshot_adapter().validate_python(plain, strict=True)
    except pydantic.ValidationError as exc:
        errors = exc.errors(include_url=False)
        first = errors[0]
        field = format_path(_in_history(first["loc"], first_message)) or "the snapshot"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        # The type of the bad input, never its value: a conversation does not belong in logs.
        got = "" if first["type"] == "missing" else f", got {_describe_type(first['input'])}"
        raise SessionError(message(f"field {field}: {first['msg']}{got}{more}")) from None


@functools.cache
def _snapshot_adapter() -> pydantic.TypeAdapter[SessionSnapshot]:
    # Built on first use rather than at import, so importing stageware stays cheap.
    import pydantic

    return pydantic.TypeAdapter(SessionSnapshot)


def _refuse_object(value: object) -> NoReturn:
    raise TypeError(f"{type(value).__qualname__} is not JSON serializable")


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


def _explain_non_json(
    value: object, root: str = "the snapshot", *, inside: bool = False, first_message: int = 0
) -> str:
    """Say where the first value that is not faithful JSON data sits in *value*.

    *root* names *value* itself when the problem is the value as a whole; with *inside*,
    it also leads the path of a value below it. *first_message* is, for a snapshot, the
    place in the history of its first message.
    """
    try:
        found = _find_non_json(value, [], set())
    except RecursionError:
        return f"{root} is nested too deeply to encode"
    if found is None:  # Only if the walk and json.dumps disagree; keep the message useful.
        return f"{root} is not JSON data"
    path, problem = found
    where = format_path(_in_history(path, first_message))
    if inside and where:
        where = root + (where if where.startswith("[") else f".{where}")
    return f"{where or root} {problem}"


def _in_history(path: Sequence[str | int], first_message: int) -> Sequence[str | int]:
    """*path* into a snapshot, with a message's index counted from the start of the history.

    A save brings only the messages after those it keeps, so the snapshot's first message
    is the history's *first_message*-th.
    """
    if first_message and len(path) > 1 and path[0] == "messages" and type(path[1]) is int:
        return ["messages", path[1] + first_message, *path[2:]]
    return path


def _find_non_json(
    value: object, path: list[str | int], active: set[int]
) -> tuple[list[str | int], str] | None:
    """Walk *value* depth first; return the path to the first non-JSON value and why."""
    # bool and the str/int/float subclasses (enums, say) encode as their base value and
    # compare equal to it, so they are faithful.
    if value is None or isinstance(value, str | int):
        return None
    if isinstance(value, float):
        if math.isfinite(value):
            return None
        return path, f"is {value!r}, which JSON cannot represent"
    if isinstance(value, list):
        return _walk(cast(list[object], value), path, active)
    if isinstance(value, dict):
        return _walk(cast(dict[object, object], value), path, active)
    if isinstance(value, tuple | set | frozenset):
        return (
            path,
            f"is {_describe_type(cast(object, value))}, which is not JSON data (use a list)",
        )
    return path, f"is {_describe_type(value)}, which is not JSON data"


def _walk(
    items: list[object] | dict[object, object],
    path: list[str | int],
    active: set[int],
) -> tuple[list[str | int], str] | None:
    """Walk the items of a list or dict for ``_find_non_json``."""
    if id(items) in active:
        return path, "refers back to itself (a circular reference)"
    active.add(id(items))
    try:
        if isinstance(items, list):
            for index, item in enumerate(items):
                found = _find_non_json(item, [*path, index], active)
                if found is not None:
                    return found
        else:
            for key, item in items.items():
                if not isinstance(key, str):
                    return path, (
                        f"has the key {key!r} ({type(key).__qualname__}); "
                        "JSON object keys must be strings"
                    )
                found = _find_non_json(item, [*path, key], active)
                if found is not None:
                    return found
    finally:
        active.discard(id(items))
    return None


def _describe_type(value: object) -> str:
    if value is None:
        return "null"
    name = type(value).__qualname__
    article = "an" if name[:1].lower() in "aeiou" else "a"
    return f"{article} {name}"
