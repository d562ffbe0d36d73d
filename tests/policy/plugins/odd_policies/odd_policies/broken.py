"""A plugin module that fails to import, as one with a missing dependency does."""

import acme_missing_dependency  # type: ignore[import-not-found]  # noqa: F401
