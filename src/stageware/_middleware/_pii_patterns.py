"""What counts as personal data for ``RedactPII``: patterns, their checks, the built-ins.

A pattern is a regular expression and, where a look-alike is common, a check on each
match (a card number must pass the Luhn check, an IBAN the mod-97 check), so that an
order number is not taken for a card. The built-ins are deliberately conservative; a
deployment adds its own ``PIIPattern`` for what its data holds (customer ids, ...).

Order matters: patterns apply one after another, each on the text the previous ones
left, so the more specific go first (a card number before a phone number; an address,
once replaced by its label, matches nothing else).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Literal, TypeAlias, cast, final

__all__ = ["BUILTIN_PATTERNS", "PIIName", "PIIPattern", "luhn_valid"]

PIIName: TypeAlias = Literal["email", "credit_card", "iban", "us_ssn", "ipv4", "phone"]
"""The names of the built-in patterns, in the order they apply."""

_LABEL = re.compile(r"[a-z][a-z0-9_]*")


@final
@dataclass(frozen=True, slots=True)
class PIIPattern:
    """One kind of personal data: how to find it and what it is called.

    Attributes:
        name: The label a match is replaced with (``[name]``); lower case letters,
            digits and ``_``.
        regex: The regular expression (a string or a compiled pattern) that finds it.
        check: Called with each match; a match for which it returns ``False`` is left
            as it is (``luhn_valid`` for card numbers).
    """

    name: str
    regex: str | re.Pattern[str]
    check: Callable[[str], bool] | None = None
    compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        name = cast(object, self.name)  # untyped callers exist
        if not isinstance(name, str) or not _LABEL.fullmatch(name):
            raise ValueError(
                f"PIIPattern name {self.name!r} must be lower case letters, digits and '_' "
                "(it becomes the label, e.g. [customer_id])"
            )
        regex = cast(object, self.regex)
        if isinstance(regex, str):
            try:
                compiled = re.compile(regex)
            except re.error as error:
                raise ValueError(f"PIIPattern {self.name!r}: bad regex: {error}") from None
        elif isinstance(regex, re.Pattern) and isinstance(
            cast("re.Pattern[str] | re.Pattern[bytes]", regex).pattern, str
        ):
            compiled = cast("re.Pattern[str]", regex)
        else:
            raise TypeError(f"PIIPattern {self.name!r}: regex must be a str or a str pattern")
        if compiled.match(""):
            raise ValueError(f"PIIPattern {self.name!r}: the regex matches the empty string")
        if self.check is not None and not callable(cast(object, self.check)):
            raise TypeError(f"PIIPattern {self.name!r}: check must be a callable (str) -> bool")
        object.__setattr__(self, "compiled", compiled)


def luhn_valid(number: str) -> bool:
    """Whether the digits of *number* (separators ignored) pass the Luhn check."""
    digits = [int(c) for c in number if c.isdigit()]
    if not 13 <= len(digits) <= 19:
        return False
    total = 0
    for index, digit in enumerate(reversed(digits)):
        if index % 2:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return total % 10 == 0


# IBAN lengths by country (the SWIFT IBAN registry). An IBAN written in lower case must
# have its country's length as well: lower-case hex ids are common in tool results, and
# the mod-97 check alone would let one in 97 through.
_IBAN_LENGTHS: Final[Mapping[str, int]] = MappingProxyType(
    {
        **dict.fromkeys(("NO",), 15),
        **dict.fromkeys(("BE",), 16),
        **dict.fromkeys(("DK", "FI", "FO", "GL", "NL"), 18),
        **dict.fromkeys(("MK", "SI"), 19),
        **dict.fromkeys(("AT", "BA", "EE", "KZ", "LT", "LU", "XK"), 20),
        **dict.fromkeys(("CH", "HR", "LI", "LV"), 21),
        **dict.fromkeys(("BG", "BH", "CR", "DE", "GB", "GE", "IE", "ME", "RS", "VA"), 22),
        **dict.fromkeys(("AE", "GI", "IL", "IQ", "TL"), 23),
        **dict.fromkeys(("AD", "CZ", "ES", "MD", "PK", "RO", "SA", "SE", "SK", "TN", "VG"), 24),
        **dict.fromkeys(("PT", "ST"), 25),
        **dict.fromkeys(("IS", "TR"), 26),
        **dict.fromkeys(("FR", "GR", "IT", "MC", "MR", "SM"), 27),
        **dict.fromkeys(("AL", "AZ", "BY", "CY", "DO", "GT", "HU", "LB", "PL", "SV"), 28),
        **dict.fromkeys(("BR", "EG", "PS", "QA", "UA"), 29),
        **dict.fromkeys(("JO", "KW", "MU"), 30),
        **dict.fromkeys(("MT", "SC"), 31),
        **dict.fromkeys(("LC",), 32),
    }
)


def _iban_valid(text: str) -> bool:
    """The ISO 13616 check: the rearranged IBAN, read as a number, is 1 mod 97."""
    compact = text.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    if not compact[:2].isupper() and _IBAN_LENGTHS.get(compact[:2].upper()) != len(compact):
        return False
    rearranged = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def _phone_digits(text: str) -> bool:
    digits = sum(c.isdigit() for c in text)
    # International (+...) numbers from 8 digits; national ones from 10, so that dates
    # (2024-01-15) and short numbers are not taken for phones.
    return 8 <= digits <= 15 if text.lstrip().startswith("+") else 10 <= digits <= 15


_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"

# A US SSN's three groups, with the numbers the SSA never issues left out.
_SSN_GROUPS = r"(?!000|666|9\d\d)\d{{3}}{sep}(?!00)\d{{2}}{sep}(?!0000)\d{{4}}"
# Nine bare digits are an SSN only right after a label saying so; anywhere else they are
# as likely an order or account number. One fixed-width look-behind per spelling.
_SSN_LABELS = "|".join(
    f"(?<={label}{after})"
    for label in (r"\b(?i:ssn)", r"\b(?i:social security number)", r"\b(?i:social security no\.)")
    for after in ("", " ", ":", ": ", "#", "# ", " #", " is ", "=", " = ")
)

BUILTIN_PATTERNS: Final[Mapping[PIIName, PIIPattern]] = MappingProxyType(
    {
        # The full-width at sign (U+FF20) too: a model or a form may write it.
        "email": PIIPattern("email", r"[\w.+-]+[@\uff20][\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}"),
        # Groups separated by spaces, dashes or dots; a sentence's full stop after the
        # number is not a separator.
        "credit_card": PIIPattern(
            "credit_card", r"(?<![\d-])(?<!\d\.)\d(?:[ .-]?\d){12,18}(?!-|\.?\d)", luhn_valid
        ),
        # Either case (the mod-97 check reads letters case-blind); see _IBAN_LENGTHS.
        "iban": PIIPattern(
            "iban",
            r"\b[A-Za-z]{2}\d{2}(?: ?[A-Za-z0-9]{4}){2,7}(?: ?[A-Za-z0-9]{1,3})?\b",
            _iban_valid,
        ),
        # 078-05-1120 and 078 05 1120 anywhere; 078051120 after a label (SSN: ...).
        "us_ssn": PIIPattern(
            "us_ssn",
            rf"\b{_SSN_GROUPS.format(sep='-')}\b|\b{_SSN_GROUPS.format(sep=' ')}\b"
            rf"|(?:{_SSN_LABELS}){_SSN_GROUPS.format(sep='')}\b",
        ),
        "ipv4": PIIPattern("ipv4", rf"(?<![\d.]){_OCTET}(?:\.{_OCTET}){{3}}(?!\.?\d)"),
        "phone": PIIPattern(
            "phone",
            r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?"
            r"\d{2,4}(?:[ .-]?\d{2,4}){1,4}(?!\w)",
            _phone_digits,
        ),
    }
)
"""The built-in patterns by name, in the order they apply."""
