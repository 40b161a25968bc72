"""One line for a failure of ``python -m colio``.

fsspec and aiohttp keep what happened out of the message: a 404 or a
refused connection reaches the user as a FileNotFoundError whose text is
only the URL, with the status or the refusal in its cause. The line says
what happened and to what, without a traceback.
"""

from __future__ import annotations

import errno
import re


class CopyError(Exception):
    """A cp failure whose message is already the line to print."""


def _chain(e: BaseException):
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        yield e
        e = e.__cause__ or e.__context__


def _http_status(e: BaseException) -> str | None:
    status = getattr(e, "status", None)  # aiohttp's ClientResponseError
    if isinstance(status, int) and not isinstance(status, bool) and status >= 400:
        return f"HTTP {status} {getattr(e, 'message', '') or ''}".strip()
    return None


def _refused(e: BaseException) -> bool:
    return isinstance(e, ConnectionRefusedError) or getattr(e, "errno", None) == errno.ECONNREFUSED


def explain(e: BaseException) -> str:
    """The exception's message, plus what its causes know that it does not."""
    msg = _http_status(e) or str(e) or type(e).__name__
    extra = []
    for x in _chain(e):
        status = _http_status(x)
        if status and str(x) and str(x) in msg:  # aiohttp's text quoted: say it plainly
            msg = msg.replace(str(x), status)
        elif status and not re.search(rf"\b{x.status}\b", msg):
            extra.append(status)
        elif not status and _refused(x):
            extra.append("connection refused")
    if not extra and isinstance(e, FileNotFoundError) and e.errno is None:
        extra.append("not found")  # fsspec's FileNotFoundError(url)
    for part in extra:
        if part.lower() not in msg.lower():
            msg = f"{msg}: {part}"
    if msg.startswith("colio: "):  # the command's own prefix says it already
        msg = msg[len("colio: "):]
    return " ".join(msg.split())


def about(name: str, e: BaseException) -> str:
    """explain(e), naming the file or URL it happened to if it does not."""
    msg = explain(e)
    return msg if name in msg else f"{name}: {msg}"
