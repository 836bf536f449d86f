"""The environment a result was computed in: the Python and package versions it records.

Below every other optimizer module (it imports none), so the search, the jobs and the report
can all record :func:`versions` without importing each other.
"""

from __future__ import annotations

import platform
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

__all__ = ["VERSION_PACKAGES", "package_version", "versions"]


def package_version() -> str:
    """The installed census-plb version (``"absent"`` when run from a source tree not installed)."""

    try:
        return version("census-plb")
    except PackageNotFoundError:
        return "absent"


#: the packages whose versions a run or report records (:func:`versions`)
VERSION_PACKAGES = (
    "census-plb",
    "numpy",
    "scipy",
    "mpmath",
    "python-flint",
    "cvxpy",
    "clarabel",
    "optuna",
    "pandas",
    "matplotlib",
)


def versions(packages: Sequence[str] = VERSION_PACKAGES) -> dict[str, str]:
    """``{"python": X.Y.Z, package: version or "absent"}``: the one version record of runs, studies
    and reports."""

    out = {"python": platform.python_version()}
    for name in packages:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "absent"
    return out
