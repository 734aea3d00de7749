"""The real compilers: a filled template compiled by the Vega-Lite compiler of the version it
declares and run by Vega, through ``vl-convert-python`` (the optional extra ``charts``).

What the service adds at run time is stood in for: its keys (``serviceConfig``) are dropped, its
format type (``formatType: "serviceFormat"``) becomes a plain d3 format, its format function in
expressions becomes ``format``, and ``containerSize()`` and ``"container"`` sizes become a fixed
size, and the Vega transforms the service adds (``sankey``, ``chord``) are left out, so that what
follows them runs on the rows they would have laid out. Nothing is fetched: no base URL is allowed,
so a template that loads a URL cannot render here. vl-convert runs in a child process
(:mod:`~analytics_provider.aml.compiler_process`): when it crashes, :class:`CompilerCrashed` is raised
and the caller lives on.
"""

from __future__ import annotations

import base64
import functools
import importlib.util
import re
from dataclasses import dataclass
from typing import Any

from analytics_provider.aml import compiler_process
from analytics_provider.aml.checks_def import did_you_mean
from analytics_provider.aml.checks_template import SERVICE_CONFIG_KEYS, SERVICE_FORMATS
from analytics_provider.aml.compiler_process import CallOverMemory, CallTimedOut, CompilerCrashed
from analytics_provider.aml.diagnostics import Reporter
from analytics_provider.aml.model import DefInfo
from analytics_provider.aml.sample import fill, sample_rows
from analytics_provider.aml.schema import DEFAULT_VEGA_LITE_MAJOR
from analytics_provider.aml.template import Engine, JNode, JObject, JString, Template, walk

PACKAGE = "vl-convert-python"
EXTRA = "charts"


def install_hint(extra: str) -> str:
    """How to install one of the package's extras, said as the README installs the package while it is
    unpublished (not by a name PyPI does not have yet)."""
    return (f"install the package with its '{extra}' extra; while it is unpublished, from a checkout: "
            f'pip install "apache-airflow==<your Airflow version>" ".[{extra}]" '
            f"-c constraints/airflow-<your Airflow version>.txt (the README's \"Use it\")")


INSTALL_HINT = install_hint(EXTRA)
DEFAULT_COMPILE_TIMEOUT = 20.0
"""Seconds one chart's compile (or drawing) may take: the charts of our corpus take under 0.3 s
each once the compiler is loaded; a chart past it is a finding (CC422), not a stuck lint."""
DEFAULT_COMPILE_MEMORY = 1024 * 1_048_576
"""Bytes of memory the compiler's process may hold during one chart's compile (or drawing): it holds
about 80 MB loaded and under 200 MB for the charts of our corpus; a chart whose data or strings grow
past it (1.5 GB within seconds was seen) is a finding (CC423), not a worker out of memory."""
WIDTH, HEIGHT = 640, 400
"""The size a chart that fills its container is drawn at."""
SERVICE_TRANSFORMS = ("sankey", "chord")
"""Vega transform types the service registers on top of Vega's own."""
_CONTAINER = re.compile(r"containerSize\(\s*\)")
_SERVICE_FUNCTIONS = re.compile(r"\b(?:holisticsFormat|serviceFormat)\s*\(")
VEGA_LITE_MARKS = ("arc", "area", "bar", "image", "line", "point", "rect", "rule", "text", "tick", "trail", "circle",
                   "square", "geoshape", "boxplot", "errorbar", "errorband")
_QUOTED = re.compile(r'"([^"\n]{1,80})"')
_EXPRESSION_KEYS = ("calculate", "filter", "expr", "test", "update", "init", "signal", "labelExpr", "as")


class CompileError(Exception):
    """The compiler or the renderer rejected a spec; ``message`` is their first line."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Compiled:
    """A template made runnable: the Vega spec, and the Vega-Lite version that compiled it ('' for
    a Vega template)."""

    vega: dict[str, Any]
    vega_lite_version: str


def available() -> bool:
    """Whether vl-convert is installed (found without importing it)."""
    return importlib.util.find_spec("vl_convert") is not None


@functools.cache
def _versions() -> tuple[str, ...]:
    return tuple(compiler_process.call("versions"))


def vega_lite_version(engine: Engine) -> str | None:
    """The compiler for a template: the newest of the declared major version not newer than a
    declared minor version (the oldest of that major when the minor is older than all); None when
    vl-convert ships no compiler of that major version."""
    major, minor = engine.version if engine.version else (DEFAULT_VEGA_LITE_MAJOR, None)
    same_major = sorted((int(t.lstrip("v").split(".")[1]), t) for t in _versions()
                        if int(t.lstrip("v").split(".")[0]) == major)
    if not same_major:
        return None
    fitting = [pair for pair in same_major if minor is None or pair[0] <= minor]
    return (fitting[-1] if fitting else same_major[0])[1]


def runnable(data: Any) -> Any:
    """A filled template with what the service adds at run time stood in for (see the module)."""
    if isinstance(data, dict):
        if data.get("formatType") in SERVICE_FORMATS:
            data = {k: v for k, v in data.items() if k not in ("formatType", "format")}
        return {k: runnable(v) for k, v in data.items() if k not in SERVICE_CONFIG_KEYS}
    if isinstance(data, list):
        return [runnable(item) for item in data
                if not (isinstance(item, dict) and item.get("type") in SERVICE_TRANSFORMS)]
    if isinstance(data, str):
        if data == "container":
            return data
        text = _CONTAINER.sub(f"[{WIDTH}, {HEIGHT}]", data)
        return _SERVICE_FUNCTIONS.sub("format(", text)
    return data


def service_transforms(data: Any) -> list[str]:
    """The service's own Vega transforms a filled template uses (left out when it is run here)."""
    if isinstance(data, dict):
        own = [data["type"]] if data.get("type") in SERVICE_TRANSFORMS else []
        return own + [name for value in data.values() for name in service_transforms(value)]
    if isinstance(data, list):
        return [name for item in data for name in service_transforms(item)]
    return []


def _sized(spec: dict[str, Any], engine: Engine) -> dict[str, Any]:
    """A size for a chart that takes its container's: Vega-Lite's "container", and a Vega spec that
    sets neither a width nor a width signal (the service gives it the block's size)."""
    signals = {s.get("name") for s in spec.get("signals", []) if isinstance(s, dict)}
    for key, size in (("width", WIDTH), ("height", HEIGHT)):
        if spec.get(key) == "container" or (engine.kind == "vega" and key not in spec and key not in signals):
            spec[key] = size
    return spec


def compile_spec(data: Any, engine: Engine, timeout: float | None = DEFAULT_COMPILE_TIMEOUT,
                 memory: int | None = DEFAULT_COMPILE_MEMORY) -> Compiled:
    """Compile filled template data (Vega-Lite to Vega; Vega as it is) and run it through Vega,
    which parses every expression and signal. Raises :class:`CompileError`,
    :class:`CompilerCrashed` when vl-convert dies on it, :class:`CallTimedOut` when it takes
    more than ``timeout`` seconds and :class:`CallOverMemory` when it holds more than ``memory``
    bytes (None: no limit)."""
    spec = _sized(runnable(data), engine)
    version = ""
    if engine.kind == "vega-lite":
        version = vega_lite_version(engine) or ""
        if not version:
            raise CompileError(f"no Vega-Lite {engine.version[0] if engine.version else '?'} compiler is "
                               f"shipped by {PACKAGE} (it has {', '.join(_versions())})")
    try:
        vega = compiler_process.call("compile", timeout, memory, spec=spec, vl_version=version)
    except compiler_process.CallFailed as exc:
        raise CompileError(_first_line(exc.message)) from None
    return Compiled(vega, version)


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    # vl-convert prefixes "Vega-Lite to Vega conversion failed:" and appends a JavaScript stack
    useful = [line for line in lines if not line.startswith("at ") and not line.endswith("failed:")]
    message = (useful or lines or ["unknown error"])[0]
    return message if len(message) <= 240 else message[:237] + "..."


def check_compile(tpl: Template, info: DefInfo, rep: Reporter,
                  timeout: float | None = DEFAULT_COMPILE_TIMEOUT, memory: int | None = DEFAULT_COMPILE_MEMORY) -> None:
    """Compile the template filled with sample rows; report why it cannot render (CC421), or
    that it took longer than ``timeout`` seconds (CC422) or more than ``memory`` bytes (CC423)."""
    engine = tpl.engine
    try:
        compile_spec(fill(tpl, info, sample_rows(info)), engine, timeout, memory)
    except CallTimedOut as exc:
        rep.add("CC422", tpl.root.offset, took_too_long(exc.seconds))
    except CallOverMemory as exc:
        rep.add("CC423", tpl.root.offset, took_too_much(exc.limit))
    except CompilerCrashed as exc:
        rep.add("CC000", tpl.root.offset, f"internal error: the compiler crashed on this template ({exc.message}); "
                                          "the other files were linted; please report it with this file")
    except CompileError as exc:
        judge = f"Vega-Lite {vega_lite_version(engine) or ''}".strip() if engine.kind == "vega-lite" else "Vega"
        unknown = _unknown_mark(tpl) if engine.kind == "vega-lite" else None
        if unknown is not None:  # the compiler fails on it without naming it
            hint = did_you_mean(unknown.value, VEGA_LITE_MARKS)
            rep.add("CC421", unknown.offset, f"the chart cannot render ({judge}): '{unknown.value}' is not a "
                                             f"Vega-Lite mark type{hint} (the compiler says: {exc.message})")
        else:
            rep.add("CC421", locate(tpl, exc.message), f"the chart cannot render ({judge}): {exc.message}")


def took_too_long(seconds: float) -> str:
    """The text of CC422."""
    return (f"compile took longer than {seconds:g} s: the compiler was stopped (the other files are still "
            "checked); make the template's data or transforms lighter (a generated sequence, a loess or "
            "regression over many rows), or allow more time (--compile-timeout)")


def took_too_much(limit: int) -> str:
    """The text of CC423."""
    return (f"compile took more than {limit // 1_048_576:,} MiB of memory: the compiler was stopped (the other "
            "files are still checked); make the template's data or transforms lighter (a generated sequence, "
            "long strings built by a calculate), or allow more memory (--compile-memory)")


def _unknown_mark(tpl: Template) -> JString | None:
    """The first mark type (``"mark": "x"`` or ``"mark": {"type": "x"}``) Vega-Lite does not have."""
    for node in walk(tpl.root):
        mark = node.get("mark") if isinstance(node, JObject) else None
        kind = mark.get("type") if isinstance(mark, JObject) else mark
        if isinstance(kind, JString) and "@{" not in kind.value and kind.value not in VEGA_LITE_MARKS:
            return kind
    return None


def locate(tpl: Template, message: str) -> int:
    """Where in the template a compiler message points: the first string the message quotes (a
    signal, param, scale or data set name; a mark type), else the first expression holding a
    quoted token, else the start of the template."""
    quoted = [q for q in _QUOTED.findall(message) if not q.startswith(("{", "["))]
    strings = [node for node in walk(tpl.root) if isinstance(node, JString)]
    for name in quoted:
        exact = next((node for node in strings if node.value == name), None)
        if exact is not None:
            return exact.offset
    words = quoted + re.findall(r"token (\S+)", message) + re.findall(r"(?:name|function):? ?(\w+)", message)
    for word in words:
        for parent in walk(tpl.root):
            if not isinstance(parent, JObject):
                continue
            for key, value in zip(parent.keys, parent.values, strict=True):
                if key.value in _EXPRESSION_KEYS and isinstance(value, JString) and _mentions(value.value, word):
                    return value.offset
    return _start(tpl.root)


def _mentions(text: str, word: str) -> bool:
    if re.fullmatch(r"\w+", word):
        return re.search(rf"\b{re.escape(word)}\b", text) is not None
    return word in text


def _start(root: JNode) -> int:
    return root.offset


class PictureTooLarge(CompileError):
    """A PNG that would have more pixels than allowed (``message`` says how many)."""


def render(compiled: Compiled, fmt: str, scale: float = 1.0,
           timeout: float | None = DEFAULT_COMPILE_TIMEOUT, max_pixels: int | None = None,
           memory: int | None = DEFAULT_COMPILE_MEMORY) -> bytes:
    """The compiled chart drawn as PNG or SVG bytes; raises as :func:`compile_spec` does, and
    :class:`PictureTooLarge` for a PNG past ``max_pixels`` (before it is painted)."""
    try:
        drawn: str = compiler_process.call("render", timeout, memory, vega=compiled.vega, fmt=fmt, scale=scale,
                                           max_pixels=max_pixels)
    except compiler_process.CallFailed as exc:
        if exc.message.startswith(compiler_process.TOO_MANY_PIXELS):
            raise PictureTooLarge(exc.message) from None
        raise CompileError(_first_line(exc.message)) from None
    return drawn.encode("utf-8") if fmt == "svg" else base64.b64decode(drawn)
