"""Field types and defaults during resolution, with problems reported at their key."""

from __future__ import annotations

from collections.abc import Mapping

from stageware_codegen.load.diagnostics import DocPath, ErrorCollector, show_value
from stageware_codegen.load.payloads import PayloadSet

from .defaults import fits
from .type_exprs import NameKind, TypeExpr, TypeExprError, parse_type

__all__ = ["FieldTypes"]


class FieldTypes:
    """Parses ``type`` keys and checks ``default`` keys against them."""

    def __init__(
        self, kinds: Mapping[str, NameKind], payloads: PayloadSet, errors: ErrorCollector
    ) -> None:
        self.kinds = kinds
        self.payloads = payloads
        self._errors = errors

    def parse(self, text: str, path: DocPath) -> TypeExpr | None:
        """The type at ``path.type``, or None after reporting why it is invalid."""
        try:
            return parse_type(text, self.kinds)
        except TypeExprError as exc:
            self._errors.add((*path, "type"), str(exc))
            return None

    def check_default(self, expr: TypeExpr | None, value: object, path: DocPath) -> None:
        """Report a ``default`` at *path* that does not fit *expr* (skipped if it is None)."""
        if expr is None:
            return
        problem = fits(expr, value, self.kinds, self.payloads.check_value)
        if problem is not None:
            self._errors.add(
                (*path, "default"),
                f"default {show_value(value)} does not fit {expr.text}: {problem}",
            )
