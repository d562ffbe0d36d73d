"""Workflow ids of durable runs read back from both ends, whatever the session id holds."""

from __future__ import annotations

import pytest

from stageware._dbos import _ids


@pytest.mark.parametrize("session_id", ["c1", "a:b", "x/1", "a:0123456789abcdef0123456789abcdef"])
def test_an_id_names_its_kind_session_and_invocation(session_id: str) -> None:
    request = _ids.request_id("support", session_id)

    assert request.startswith(f"stageware:support:{session_id}:")
    assert _ids.parse(request) == ("support", session_id, None)
    assert _ids.parse(_ids.invocation_id(request, 2)) == ("support", session_id, 2)


@pytest.mark.parametrize(
    "workflow_id",
    [
        "b0c9a1e2-some-dbos-uuid",
        "stageware:support:c1",
        "stageware:support::0123456789abcdef0123456789abcdef",
        "stageware:sup port:c1:0123456789abcdef0123456789abcdef",
        "stageware:support:c1:0123456789abcdef0123456789abcdef/0",
    ],
)
def test_other_ids_are_not_read_as_durable_runs(workflow_id: str) -> None:
    assert _ids.parse(workflow_id) is None
