"""Headless Chromium (Debian's package) driven over the DevTools protocol on a pipe
(``--remote-debugging-pipe``: commands on the child's fd 3, answers and events on its fd 4, each a
JSON text ended by a NUL byte): no port to find, no package but the standard library.

:class:`Chromium` does what a screenshot of a page behind a login needs: a cookie set for the
page's site before it is opened, the page opened, its text awaited in the page (a
``MutationObserver``, up to a deadline), its requests answered, a PNG of it."""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from types import TracebackType
from typing import Any

WAIT_FOR_TEXT = """(texts, ms) => new Promise(resolve => {
  const seen = () => Object.fromEntries(texts.map(t => [t, (document.body?.innerText ?? "").includes(t)]));
  const done = () => Object.values(seen()).every(Boolean);
  if (done()) return resolve(seen());
  const observer = new MutationObserver(() => { if (done()) { observer.disconnect(); resolve(seen()); } });
  observer.observe(document, {childList: true, subtree: true, characterData: true});
  setTimeout(() => { observer.disconnect(); resolve(seen()); }, ms);
})"""
"""Resolves, once every text is in the page's text or after ``ms``, to which texts it holds."""


class DevToolsError(RuntimeError):
    """Chromium answered a command with an error, closed its pipe, or did not answer in time."""


class Chromium:
    """One headless Chromium with one page, stopped (by its process id) on leaving the ``with``."""

    def __init__(self, width: int = 1400, height: int = 1000, timeout: float = 60) -> None:
        self.timeout = timeout
        self.profile = Path(tempfile.mkdtemp(prefix="e2e-chromium-"))
        # the pipe ends the child gets, above 4, so that moving them onto 3 and 4 overwrites neither
        to_child, self._to = os.pipe()
        self._from, from_child = os.pipe()
        to_child, from_child = (self._above_4(fd) for fd in (to_child, from_child))
        command = ["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                   "--no-first-run", "--no-default-browser-check", "--no-proxy-server",
                   f"--window-size={width},{height}", f"--user-data-dir={self.profile}",
                   "--remote-debugging-pipe", "about:blank"]
        with (self.profile / "stderr.log").open("wb") as stderr:
            self.process = subprocess.Popen(
                # bash: dash takes no file descriptor above 9 in a redirection
                ["bash", "-c", f'exec "$@" 3<&{to_child} 4>&{from_child} {to_child}<&- {from_child}>&-', "bash",
                 *command], pass_fds=(to_child, from_child), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=stderr, start_new_session=True)
        os.close(to_child)
        os.close(from_child)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.requests: dict[str, str] = {}
        """The page's HTTP requests sent and not yet answered (Network events): their URLs by id."""
        self.network_at = time.monotonic()
        try:
            target = self.command("Target.createTarget", url="about:blank")["targetId"]
            self.session = self.command("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            self.command("Page.enable", session=True)
            self.command("Network.enable", session=True)
            self.command("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
                         deviceScaleFactor=1, mobile=False)  # the page's size, whatever the window's frame takes
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _above_4(fd: int) -> int:
        if fd > 4:
            return fd
        import fcntl

        moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 5)
        os.close(fd)
        return moved

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Browser.close, then whatever is left of its process group (its own session) is killed."""
        if self.process.poll() is None:
            with suppress(DevToolsError, OSError, subprocess.TimeoutExpired):
                self.command("Browser.close", timeout=20)
                self.process.wait(20)
        with suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)
        for fd in (self._to, self._from):
            with suppress(OSError):
                os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)

    def command(self, method: str, session: bool = False, timeout: float | None = None, **params: Any) -> Any:
        """Send a command (to the page's session with ``session``) and return its result; the events
        that arrive meanwhile are kept in :attr:`events`."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._to, json.dumps(message).encode() + b"\0")
        answer = self._receive(lambda m: m.get("id") == self._next_id, timeout or self.timeout, method)
        if "error" in answer:
            raise DevToolsError(f"{method}: {answer['error'].get('message')}")
        return answer.get("result", {})

    def wait_event(self, method: str, timeout: float | None = None) -> dict[str, Any]:
        for i, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(i)
        return self._receive(lambda m: m.get("method") == method, timeout or self.timeout, method)

    def _receive(self, wanted: Callable[[dict[str, Any]], bool] | None, timeout: float,
                 what: str) -> dict[str, Any]:
        """The first message ``wanted`` takes, the others kept (events) or counted (the network's);
        ``wanted`` None: every message that arrives in ``timeout`` s, then an empty one."""
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                message = json.loads(raw)
                if wanted is not None and wanted(message):
                    return dict(message)
                if str(message.get("method", "")).startswith("Network."):
                    self._count_request(message)
                elif "method" in message:
                    self.events.append(message)
            left = deadline - time.monotonic()
            if left <= 0:
                if wanted is None:
                    return {}
                raise DevToolsError(f"{what}: no answer from Chromium in {timeout:g} s")
            if select.select([self._from], [], [], left)[0]:
                chunk = os.read(self._from, 1 << 20)
                if not chunk:
                    with suppress(subprocess.TimeoutExpired):
                        self.process.wait(10)
                    said = (self.profile / "stderr.log").read_text(errors="replace").strip().splitlines()[-5:]
                    raise DevToolsError(f"{what}: Chromium closed its pipe (exit code {self.process.poll()}); "
                                        f"the end of its stderr: {said}")
                self._buffer += chunk

    def _count_request(self, event: dict[str, Any]) -> None:
        request = event.get("params", {}).get("requestId")
        url = str(event.get("params", {}).get("request", {}).get("url"))
        if event["method"] == "Network.requestWillBeSent" and url.startswith(("http:", "https:")):
            self.requests[request] = url  # not blob: or data: (a worker's blob: never reports its end)
        elif event["method"] in ("Network.loadingFinished", "Network.loadingFailed"):
            self.requests.pop(request, None)
        self.network_at = time.monotonic()

    def wait_quiet(self, quiet: float = 0.5, timeout: float = 30) -> bool:
        """Whether the page's requests all got their answers and none was sent for ``quiet`` s
        (waited for up to ``timeout`` s): what a page that fills itself in from its API needs
        before its picture is taken."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.requests and time.monotonic() - self.network_at >= quiet:
                return True
            self._receive(None, min(quiet, max(0.0, deadline - time.monotonic())), "the network")
        return False

    def set_cookie(self, url: str, name: str, value: str) -> None:
        """A cookie for ``url``'s site, HTTP-only as a login would set it (its value is never shown)."""
        result = self.command("Network.setCookie", session=True, url=url, name=name, value=value, path="/",
                              httpOnly=True, sameSite="Lax")
        if not result.get("success", True):
            raise DevToolsError(f"Network.setCookie refused the cookie {name} for {url}")

    def open(self, url: str) -> str:
        """Open ``url`` and wait for its load event; the URL the page ended on."""
        self.events.clear()
        self.requests.clear()
        answer = self.command("Page.navigate", session=True, url=url)
        if answer.get("errorText"):
            raise DevToolsError(f"opening {url}: {answer['errorText']}")
        self.wait_event("Page.loadEventFired")
        return self.location()

    def location(self) -> str:
        return str(self.evaluate("location.href"))

    def evaluate(self, expression: str, timeout: float | None = None) -> Any:
        result = self.command("Runtime.evaluate", session=True, timeout=timeout, expression=expression,
                              awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in result:
            raise DevToolsError(f"in the page: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def wait_for_texts(self, texts: tuple[str, ...], timeout: float) -> dict[str, bool]:
        """Which of ``texts`` the page's text holds, once it holds them all or after ``timeout`` s.

        A page that replaces itself meanwhile (a redirect: its script context is gone) is looked
        at again, until the deadline."""
        deadline = time.monotonic() + timeout
        while True:
            left = max(0.0, deadline - time.monotonic())
            try:
                seen = self.evaluate(f"({WAIT_FOR_TEXT})({json.dumps(list(texts))}, {int(left * 1000)})",
                                     timeout=left + 30)
            except DevToolsError as error:
                replaced = any(why in str(error) for why in ("navigated or closed", "context was destroyed"))
                if not replaced or time.monotonic() >= deadline:
                    raise
                self.wait_event("Page.loadEventFired", timeout=max(1.0, deadline - time.monotonic()))
                continue
            return {text: bool(seen.get(text)) for text in texts}

    def screenshot(self, path: Path) -> int:
        """A PNG of the page's viewport at ``path`` (written whole or not at all); its size in bytes."""
        data = base64.b64decode(self.command("Page.captureScreenshot", session=True, format="png")["data"])
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".part")
        partial.write_bytes(data)
        partial.replace(path)
        return len(data)
