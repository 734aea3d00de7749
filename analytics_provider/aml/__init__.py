"""Parser, checker and lint command for AML custom chart definitions (CustomChartDef, CustomChart).

Run ``python -m analytics_provider.aml lint PATH...``, or call :func:`lint_paths`. Importing this
package is cheap: it loads neither Airflow nor jsonschema, and each of its names is loaded on first
use, so a module that needs only :class:`Diagnostic` (the publish operator, the delivery files'
check: DAG files import them) does not load the checker and the compiler.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from analytics_provider.aml.codes import CODES
    from analytics_provider.aml.diagnostics import Diagnostic
    from analytics_provider.aml.lint import lint_paths, lint_text

_WHERE = {"CODES": "codes", "Diagnostic": "diagnostics", "lint_paths": "lint", "lint_text": "lint"}
__all__ = ["CODES", "Diagnostic", "lint_paths", "lint_text"]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)
