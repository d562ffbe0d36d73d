"""SignedCredentials on its own, with a clock: whatever a credential is, the answer is an
``Approver`` or ``ApprovalRefused``, never another error, and nothing that never expires.

A prompt sender chooses the credential, so every malformed one must be refused the way a
forged one is; a signed body with claims of the wrong type (a console's bug) too.
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import cast

import pytest

from stageware.policy import ApprovalRefused, Approver, SignedCredentials

from .approvers import SECRET, signed

NOW = 1_000_000.0


def credentials(now: float = NOW) -> SignedCredentials:
    return SignedCredentials(SECRET, clock=lambda: now)


def test_a_credential_proves_its_approver_until_it_expires() -> None:
    token = credentials().issue("dana", roles=["finance"], ttl=timedelta(minutes=5))

    assert credentials(NOW + 299)(token) == Approver("dana", frozenset({"finance"}))
    with pytest.raises(ApprovalRefused, match="credential of 'dana' has expired"):
        credentials(NOW + 300)(token)


@pytest.mark.parametrize(
    "token",
    [
        pytest.param("\ud800abc.xyz", id="lone surrogate in the body"),
        pytest.param("abc.\ud800", id="lone surrogate in the signature"),
        pytest.param("caf\u00e9.abc", id="not ASCII"),
        pytest.param(12345, id="not a string"),
        pytest.param(None, id="None"),
        pytest.param("no-dot", id="no signature"),
    ],
)
def test_a_credential_that_is_not_a_token_is_refused(token: object) -> None:
    with pytest.raises(ApprovalRefused, match="not one this authenticator signed"):
        credentials()(cast(str, token))  # a prompt may send anything


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        pytest.param(b"not json", "body is not JSON claims", id="not JSON"),
        pytest.param(b"\xff\xfe", "body is not JSON claims", id="not UTF-8"),
        pytest.param(b"[" * 100_000, "body is not JSON claims", id="nested too deep"),
        pytest.param(b"[1, 2]", "claims are not a JSON object", id="a list"),
        pytest.param(b'{"sub":"x","roles":[]}', "'exp' claim", id="no exp"),
        pytest.param(b'{"sub":"x","roles":[],"exp":"soon"}', "'exp' claim", id="exp a string"),
        pytest.param(b'{"sub":"x","roles":[],"exp":NaN}', "'exp' claim", id="exp NaN"),
        pytest.param(b'{"sub":"x","roles":[],"exp":Infinity}', "'exp' claim", id="exp inf"),
        pytest.param(b'{"sub":"x","roles":[],"exp":1e400}', "'exp' claim", id="exp overflows"),
        pytest.param(
            b'{"sub":"x","roles":[],"exp":1' + b"0" * 400 + b"}", "'exp' claim", id="exp huge int"
        ),
        pytest.param(b'{"sub":"x","roles":[],"exp":true}', "'exp' claim", id="exp a bool"),
        pytest.param(b'{"roles":[],"exp":2e6}', "'sub' claim", id="no sub"),
        pytest.param(b'{"sub":"","roles":[],"exp":2e6}', "'sub' claim", id="sub empty"),
        pytest.param(b'{"sub":7,"roles":[],"exp":2e6}', "'sub' claim", id="sub a number"),
        pytest.param(b'{"sub":"x","roles":"finance","exp":2e6}', "'roles' claim", id="roles str"),
        pytest.param(b'{"sub":"x","roles":[1],"exp":2e6}', "'roles' claim", id="roles of ints"),
        pytest.param(b'{"sub":"x","exp":2e6}', "'roles' claim", id="no roles"),
        pytest.param(
            b'{"sub":"role:finance","roles":[],"exp":2e6}',
            "may not start with 'role:'",
            id="role id",
        ),
    ],
)
def test_signed_claims_of_the_wrong_shape_are_refused(body: bytes, problem: str) -> None:
    token = signed(body)

    with pytest.raises(ApprovalRefused, match=problem):
        credentials()(token)


def test_signed_claims_of_the_right_shape_are_accepted() -> None:
    # The helper signs the way issue() does: the refusals above are the claims', not its.
    token = signed(b'{"sub":"x","roles":["ops"],"exp":2000000}')
    assert credentials()(token) == Approver("x", frozenset({"ops"}))


@pytest.mark.parametrize("ttl", [math.inf, -math.inf, math.nan, 0, -1, timedelta(seconds=0)])
def test_a_credential_must_expire(ttl: float | timedelta) -> None:
    with pytest.raises(ValueError, match="ttl must be finite and positive"):
        credentials().issue("dana", ttl=ttl)


def test_an_approver_id_cannot_name_a_role() -> None:
    with pytest.raises(ValueError, match="may not start with 'role:'"):
        Approver("role:ops")
    with pytest.raises(ValueError, match="may not start with 'role:'"):
        credentials().issue("role:ops")
