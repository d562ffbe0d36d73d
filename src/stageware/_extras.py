"""How to install an extra, worded the same way by every message that needs one.

stageware is not published on PyPI, so ``pip install 'stageware[x]'`` fails there, or
installs whatever someone else published under the name: every hint installs from a
clone or from a git URL instead, as the README's install section does.
"""

from __future__ import annotations

__all__ = ["GIT_URL", "needs_extra"]

GIT_URL = "git+https://<your-git-host>/stageware.git"
"""Where a deployment installs stageware from; the host is the deployment's own."""


def needs_extra(extra: str) -> str:
    """The end of a "... needs" message: which extra to install, and the two ways to.

    Args:
        extra: The extra's name in ``[project.optional-dependencies]``, e.g. ``console``.

    Returns:
        For example "the `console` extra: pip install -e '.[console]' in a clone, or
        pip install 'stageware[console] @ git+https://<your-git-host>/stageware.git'".
    """
    return (
        f"the `{extra}` extra: pip install -e '.[{extra}]' in a clone, "
        f"or pip install 'stageware[{extra}] @ {GIT_URL}'"
    )
