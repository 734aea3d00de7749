"""Sphinx configuration of the airflow-provider-analytics documentation.

Build: ``python -m sphinx -W --keep-going -b html docs docs/_build/html``.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

# Airflow reads (and writes) its configuration when autodoc first imports it: give it a
# throw-away home, whatever the environment says, so a build never touches a real one.
_AIRFLOW_HOME = tempfile.mkdtemp(prefix="analytics-provider-docs-")
atexit.register(shutil.rmtree, _AIRFLOW_HOME, ignore_errors=True)
os.environ["AIRFLOW_HOME"] = _AIRFLOW_HOME
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(DOCS.parent))  # the package, should it not be installed

from analytics_provider import __version__  # noqa: E402

project = "airflow-provider-analytics"
author = "airflow-provider-analytics contributors"
copyright = "the airflow-provider-analytics contributors"
version = release = __version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "analytics_docs",  # docs/_ext/analytics_docs.py: tables generated from the code
    "aml_preview",  # docs/_ext/aml_preview.py: custom chart previews drawn at build time
]

root_doc = "index"
source_suffix = {".rst": "restructuredtext"}
exclude_patterns = [
    "_build",
    "_ext",
    "emulator_notes.md",
    # generated at build time by analytics_docs, pulled in with ``.. include::``
    "operations_table.rst",
    "exceptions_tree.rst",
    "regions_table.rst",
    "error_statuses.rst",
    "emulator_levels.rst",
    "connection_fields.rst",
    "emulator_seed.rst",
]

nitpicky = False
default_role = "literal"

autodoc_member_order = "bysource"
autodoc_preserve_defaults = True
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented_params"
autodoc_default_options = {"show-inheritance": True}

napoleon_google_docstring = False
napoleon_numpy_docstring = False

html_theme = "alabaster"
html_title = f"{project} {release}"
html_theme_options = {
    "description": "Apache Airflow provider for the analytics service's public API v2",
    "fixed_sidebar": True,
    "page_width": "1100px",
    "sidebar_width": "230px",
}
html_static_path = ["_static"]
