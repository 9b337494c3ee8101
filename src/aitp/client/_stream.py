"""Live events over the server's WebSocket feeds: resumable, in order, with posts on the same socket.

The server sends every event after the subscriber's cursor, then live ones (`aitp.bindings.openai_threads.live`). A
`LiveStream` remembers the cursor of the last event it received and, when the connection drops (no
close frame, 1001/1011/1012/1013/1014) or the server closes it as a slow consumer (4008), reconnects
with `after=<that cursor>`: the caller sees every event once, in order. Close 1000 (thread deleted,
or the subscriber removed from it) ends the iteration; 4401 and 4403 raise `Unauthenticated` and
`NotFound`.

Reading is pull-based: frames stay in the socket until someone asks for the next event (or waits for
a post's reply), so a slow caller is closed by the server with 4008 and resumes, instead of growing
this process's memory.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Generic, Self, TypeVar

import websockets
from websockets.asyncio.client import ClientConnection, connect

from aitp import __version__
from aitp.bindings.openai_threads.models import Event, Message
from aitp.client._content import MessageContent, content_body
from aitp.client._errors import AitpError, NotFound, Unauthenticated, error_class, unsupported_by
from aitp.client._http import API_PREFIX, HttpSession

log = logging.getLogger("aitp.client")

E = TypeVar("E", bound=Event)

CLOSE_NORMAL = 1000  # the thread was deleted, or the subscriber removed from it
CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4403
# Worth a reconnect from the cursor: going away, server error, service restart, try again, bad gateway,
# slow consumer; a connection lost without a close frame counts too.
RESUMABLE = frozenset({1001, 1005, 1006, 1011, 1012, 1013, 1014, 4008})


@dataclass(frozen=True)
class Reconnect:
    """How a live stream reconnects: exponential backoff from `initial_delay` to `max_delay` seconds (reset
    once a frame arrives); after `max_attempts` consecutive failed connects it raises the last error."""

    initial_delay: float = 0.1
    max_delay: float = 5.0
    max_attempts: int = 10


# Post replies carry the error envelope but not the HTTP status; these are the statuses the same
# refusals have over HTTP (`type` tells 401/403 apart; every other client error shares a type).
_REPLY_STATUS = {
    "already_answered": 409,
    "duplicate_request_id": 409,
    "capability_version_exists": 409,
    "conflict": 409,
    "payload_too_large": 413,
    "invalid_capability_message": 422,
    "invalid_decision": 422,
    "invalid_data": 422,
    "invalid_payment": 422,
    "unknown_request": 422,
    "unknown_capability": 422,
    "capability_not_supported": 422,
    "unprocessable": 422,
}
_TYPE_STATUS = {"authentication_error": 401, "permission_error": 403, "rate_limit_error": 429}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def reply_error(reply: Mapping[str, Any]) -> AitpError:
    """The exception for an `{"op": "error"}` reply, chosen as the same refusal over HTTP would be."""
    envelope = reply.get("error")
    error = envelope.get("error") if isinstance(envelope, Mapping) else None
    if not isinstance(error, Mapping):
        error = {}
    code, kind = _text(error.get("code")), _text(error.get("type"))
    status = reply.get("status")
    if not isinstance(status, int):
        status = _TYPE_STATUS.get(kind or "") or _REPLY_STATUS.get(code or "")
        if status is None:
            status = 404 if code and code.endswith("not_found") else 400
    return error_class(status)(
        _text(error.get("message")) or "The post was refused.",
        status=status,
        type=kind,
        code=code,
        param=_text(error.get("param")),
        unsupported_by=unsupported_by(error),
    )


def _handshake_error(error: websockets.InvalidStatus) -> AitpError:
    # Refused before the upgrade (a proxy, an old server without the route): the body may hold the envelope.
    response = error.response
    status = response.status_code
    try:
        body = json.loads(response.body or b"")
        envelope = body.get("error") if isinstance(body, dict) else None
    except ValueError:
        envelope = None
    if not isinstance(envelope, dict):
        envelope = {"message": (response.body or b"").decode(errors="replace").strip()[:500] or response.reason_phrase}
    return error_class(status)(
        _text(envelope.get("message")) or f"HTTP {status}",
        status=status,
        type=_text(envelope.get("type")),
        code=_text(envelope.get("code")),
        param=_text(envelope.get("param")),
    )


def ws_url(root: str, path: str) -> str:
    """`http(s)://host/...` as `ws(s)://host/v1<path>`."""
    if root.startswith("https://"):
        return "wss://" + root.removeprefix("https://") + API_PREFIX + path
    return "ws://" + root.removeprefix("http://") + API_PREFIX + path


class LiveStream(Generic[E]):
    """One live feed: `async with` it, `async for` its events, `await post(...)` messages on the same socket.

    `cursor` is the position of the last event handed to the caller (`seq`, or the inbox `cursor`): a new
    stream opened with `after=stream.cursor` continues exactly where this one stopped. Several tasks may
    use one stream, e.g. one iterating while another posts; whoever is reading delivers the others' replies.
    """

    def __init__(
        self,
        session: HttpSession,
        path: str,
        model: type[E],
        cursor_of: Callable[[E], int],
        *,
        after: int,
        reconnect: Reconnect | None = None,
    ) -> None:
        self._session = session
        self._path = path
        self._model = model
        self._cursor_of = cursor_of
        self._reconnect = reconnect or Reconnect()
        self.cursor = after
        self._received = after  # cursor of the last event read off the socket (resume point)
        self._socket: ClientConnection | None = None
        self._pending: deque[E] = deque()  # read while waiting for a post reply, not yet handed out
        self._replies: dict[int, asyncio.Future[Message]] = {}
        self._refs = 0
        self._reading = asyncio.Lock()  # one reader (or connector) at a time
        self._stepped = asyncio.Event()  # set after each read, for tasks waiting on another task's reading
        self._failures = 0
        self._delay = self._reconnect.initial_delay
        self._connected_once = False
        self._ended: BaseException | None = None  # why the stream is over: ConnectionClosed (1000) or an error
        self._error: BaseException | None = None  # raised to the caller once pending events are out

    # --------------------------------------------------------------------------------- lifecycle

    async def __aenter__(self) -> Self:
        """Connect (retrying as `Reconnect` says); a refusal after the upgrade (4401, 4403) surfaces on reading."""
        await self._until(lambda: self._socket is not None)
        if self._error is not None:
            raise self._error
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection; iteration ends and later posts fail."""
        if self._ended is None:
            self._ended = websockets.ConnectionClosedOK(None, None)
        socket, self._socket = self._socket, None
        self._pending.clear()
        self._fail_replies(self._ended)
        if socket is not None:
            await socket.close()

    # -------------------------------------------------------------------------------- iteration

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> E:
        await self._until(lambda: bool(self._pending))
        if self._pending:
            event = self._pending.popleft()
            self.cursor = self._cursor_of(event)
            return event
        if self._error is not None:
            raise self._error
        raise StopAsyncIteration

    # ------------------------------------------------------------------------------------ posts

    async def post(
        self,
        content: MessageContent,
        *,
        metadata: Mapping[str, str] | None = None,
        attachments: Sequence[Mapping[str, Any]] | None = None,
        idempotency_key: str | None = None,
    ) -> Message:
        """Post a message as the caller over the socket (same validation and errors as `create_message`).

        If the connection drops before the reply, this raises `websockets.ConnectionClosed`: the message
        may or may not have been created (if it was, its `thread.message.created` event still arrives).
        Posted with an `idempotency_key`, it is safe to post again with the same key: it is written once.
        Events read while waiting for the reply are kept for the stream's iteration.
        """
        message: dict[str, Any] = {"content": content_body(content)}
        if metadata is not None:
            message["metadata"] = dict(metadata)
        if attachments is not None:
            message["attachments"] = [dict(a) for a in attachments]
        await self._until(lambda: self._socket is not None)
        if self._socket is None:
            raise self._error or self._ended or RuntimeError("the stream is closed")
        self._refs += 1
        ref = self._refs
        reply: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._replies[ref] = reply
        try:
            try:
                frame = {"op": "post", "ref": ref, "message": message}
                if idempotency_key is not None:
                    frame["idempotency_key"] = idempotency_key
                await self._socket.send(json.dumps(frame))
            except websockets.ConnectionClosed:
                pass  # the reader sees the same close and fails the reply
            await self._until(reply.done)
            if not reply.done():
                raise self._error or self._ended or RuntimeError("the stream is closed")
            return reply.result()
        finally:
            self._replies.pop(ref, None)

    # ---------------------------------------------------------------------------------- reading

    @property
    def _over(self) -> bool:
        return self._ended is not None or self._error is not None

    async def _until(self, ready: Callable[[], bool]) -> None:
        """Read (or reconnect) until `ready()` or the stream is over; if another task is reading, let it."""
        while not ready() and not self._over:
            if self._reading.locked():
                stepped = self._stepped
                await stepped.wait()
                continue
            async with self._reading:
                if not ready() and not self._over:
                    await self._step()

    async def _step(self) -> None:
        try:
            if self._socket is None:
                await self._connect()
                return
            try:
                raw = await self._socket.recv()
            except websockets.ConnectionClosed as closed:
                self._closed(closed)
                return
            self._dispatch(raw)
        except Exception as error:
            self._error = error
            self._fail_replies(error)
        finally:
            # Wake tasks waiting on this read, and give the next read a fresh event to signal.
            self._stepped.set()
            self._stepped = asyncio.Event()

    async def _connect(self) -> None:
        if self._connected_once or self._failures:
            delay = self._delay * random.uniform(0.5, 1.0)  # jitter: clients dropped together do not return together
            self._delay = min(self._delay * 2, self._reconnect.max_delay)
            await asyncio.sleep(delay)
        url = f"{ws_url(self._session.root, self._path)}?after={self._received}"
        try:
            socket = await connect(
                url,
                additional_headers={"Authorization": f"Bearer {self._session.api_key}"},
                user_agent_header=f"aitp-client/{__version__}",
                open_timeout=self._session.timeout,
                # Events embed whole messages; a frame over a size limit would close the socket, and every
                # resume would stop at the same event.
                max_size=None,
            )
        except websockets.InvalidStatus as refused:
            if refused.response.status_code < 500:
                raise _handshake_error(refused) from None
            self._failed(refused)
        except (OSError, TimeoutError, websockets.InvalidHandshake, websockets.ConnectionClosed) as error:
            self._failed(error)
        else:
            if self._over:  # closed by `aclose` while connecting
                await socket.close()
                return
            self._socket = socket
            self._failures = 0
            self._connected_once = True
            log.debug("connected to %s", url)

    def _failed(self, error: BaseException) -> None:
        self._failures += 1
        if self._failures >= self._reconnect.max_attempts:
            raise error
        log.info("connecting to %s failed (%s); retrying", self._path, error)

    def _closed(self, closed: websockets.ConnectionClosed) -> None:
        self._socket = None
        frame = closed.rcvd
        code = frame.code if frame is not None else 1006
        reason = frame.reason if frame is not None else "no close frame"
        if code == CLOSE_NORMAL:
            log.info("%s ended: %s", self._path, reason)
            self._ended = closed
        elif code == CLOSE_UNAUTHENTICATED:
            self._error = Unauthenticated(reason or "Invalid API key.", status=401, type="authentication_error")
        elif code == CLOSE_NOT_FOUND:
            # The same answer as over HTTP: not a member, or no such thread.
            on_thread = self._path.startswith("/threads/")
            self._error = NotFound(
                reason or "Not found.",
                status=404,
                type="invalid_request_error",
                code="thread_not_found" if on_thread else None,
                param="thread_id" if on_thread else None,
            )
        elif code in RESUMABLE:
            log.info("%s closed (%d %s); resuming after %d", self._path, code, reason, self._received)
        else:
            self._error = closed
        # A post in flight when the connection dropped has an unknown outcome: its caller decides.
        self._fail_replies(self._error or closed)

    def _dispatch(self, raw: str | bytes) -> None:
        frame = json.loads(raw)
        self._delay = self._reconnect.initial_delay
        if "op" not in frame:
            event = self._model.model_validate(frame)
            cursor = self._cursor_of(event)
            if cursor > self._received:  # never twice, whatever a resume replays
                self._received = cursor
                self._pending.append(event)
            return
        reply = self._replies.get(frame.get("ref")) if isinstance(frame.get("ref"), int) else None
        if reply is None or reply.done():
            return  # a reply to a post whose caller gave up (or a refused non-JSON frame: we send none)
        if frame["op"] == "posted":
            reply.set_result(Message.model_validate(frame["message"]))
        else:
            reply.set_exception(reply_error(frame))

    def _fail_replies(self, error: BaseException) -> None:
        for reply in self._replies.values():
            if not reply.done():
                reply.set_exception(error)
