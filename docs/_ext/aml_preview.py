"""The directive ``.. aml-preview:: path/to/chart.chart.aml``: a chart definition drawn at build time.

The path is relative to the docs folder. The picture is drawn with sample rows by
:func:`analytics_provider.aml.preview.preview` (the ``preview`` command) into ``docs/_previews/``
(ignored by git) and shown as an image. Without vl-convert (the ``charts`` extra) the directive shows
a note instead, so the build passes; a chart that cannot be drawn is a Sphinx warning (an error under
``-W``). A picture is redrawn only when its definition is newer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from docutils import nodes
from docutils.parsers.rst import Directive, directives
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)
FOLDER = "_previews"


class AmlPreview(Directive):
    """Draw one chart definition and show it."""

    required_arguments = 1
    option_spec: ClassVar[dict[str, Any]] = {"alt": directives.unchanged,
                                             "width": directives.length_or_percentage_or_unitless}

    def run(self) -> list[nodes.Node]:
        from analytics_provider.aml import compiler
        from analytics_provider.aml.preview import PreviewError, preview

        env = self.state.document.settings.env
        source = (Path(env.srcdir) / self.arguments[0]).resolve()
        env.note_dependency(str(source))
        if not compiler.available():
            note = nodes.note()
            note += nodes.paragraph(text=f"Preview of {source.name} not drawn: this build has no "
                                         f"{compiler.PACKAGE} ({compiler.INSTALL_HINT}).")
            return [note]
        target = Path(env.srcdir) / FOLDER / (source.name.removesuffix(".chart.aml") + ".png")
        if not target.exists() or target.stat().st_mtime < source.stat().st_mtime:
            try:
                preview(source, out=target, scale=1.5)
            except PreviewError as exc:
                where = "; ".join(d.format() for d in exc.diagnostics)
                logger.warning("aml-preview: %s%s", exc, f" ({where})" if where else "", location=self.get_location())
                return []
            except compiler.CompilerCrashed as exc:
                logger.warning("aml-preview: the compiler crashed on %s: %s", source.name, exc.message,
                               location=self.get_location())
                return []
        image = nodes.image(uri=f"/{FOLDER}/{target.name}", alt=self.options.get("alt", source.name))
        if "width" in self.options:
            image["width"] = self.options["width"]
        return [image]


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("aml-preview", AmlPreview)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
