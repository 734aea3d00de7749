"""Parser, checker and lint command for AML custom chart definitions (CustomChartDef, CustomChart).

Run ``python -m analytics_provider.aml lint PATH...``, or call :func:`lint_paths`. Importing this
package is cheap: it loads neither Airflow nor jsonschema (the schema check loads it on first use).
"""

from __future__ import annotations

from analytics_provider.aml.codes import CODES
from analytics_provider.aml.diagnostics import Diagnostic
from analytics_provider.aml.lint import lint_paths, lint_text

__all__ = ["CODES", "Diagnostic", "lint_paths", "lint_text"]
