"""What our server code relies on in uvicorn's, Starlette's and FastAPI's private internals, pinned.

Specification: every place where aitp subclasses, wraps or reaches into code those projects do not promise to
keep has a pin here, naming the upstream code, the shape relied on, and the module of ours to re-check. An
upgrade that changes that code fails here, loudly, before it fails in production:

- a source pin holds the SHA-256 of `inspect.getsource` of the upstream function or class for each release it
  was checked against; any change to that code is a failure saying what to re-read (and when the module is
  re-checked, `python tests/server/test_internals.py` prints the hashes to record);
- a shape pin checks signatures, attributes and call shapes (the access line's five arguments, how FastAPI
  builds a route and reads its body) with no hash, and so holds across releases that keep them.
"""

from __future__ import annotations

import ast
import asyncio
import hashlib
import importlib
import importlib.metadata
import inspect
import textwrap
from dataclasses import dataclass
from typing import Any

import pytest


@dataclass(frozen=True)
class SourcePin:
    dist: str  # the distribution whose code this is
    target: str  # "module:Qualified.name"
    checked: dict[str, str]  # sha256 of its source -> the release(s) it was checked against
    ours: str  # the module of ours that relies on it
    relies: str  # what it relies on

    def obj(self) -> Any:
        module, _, qualname = self.target.partition(":")
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
        return found

    def digest(self) -> str:
        return hashlib.sha256(inspect.getsource(self.obj()).encode()).hexdigest()


UVICORN_HTTP = "uvicorn.protocols.http.httptools_impl"
SOURCE_PINS = [
    SourcePin(
        "uvicorn",
        f"{UVICORN_HTTP}:HttpToolsProtocol.data_received",
        {"010a7ae59a5d3b1a5e7326ce246878568629d126a076d8af5ba10cab040fae43": "0.51.0 to 0.54.0"},
        "aitp.server.http_protocol",
        "LimitedHttpProtocol.data_received wraps it: it feeds the parser, answers a parser error (the HeadTooLarge "
        "our callbacks raise) with send_400_response, which we turn into the 431, and hands an upgrade on",
    ),
    SourcePin(
        "uvicorn",
        "uvicorn.protocols.websockets.websockets_sansio_impl:WebSocketsSansIOProtocol",
        {
            "613e58147993524ebd699687b9474a7e82c743f07be7c9e9a48f1d388bd3ff7b": "0.51.0",
            "94ce344c5008b2582b7b3bfecc7f8e9fa792783ddb7f87b2443bb632d1d1bd1f": "0.52.0",
            "0bbcec98938432f71b93ca20eea63487298f4650159242db8526a6f664902997": "0.53.0, 0.54.0",
        },
        "aitp.server.websocket_protocol",
        "TurnWrites: the transport given to connection_made is the one every frame is written through "
        "(write, close, is_closing), and nothing needs a frame sent before the turn ends",
    ),
]


def current_digests() -> dict[str, tuple[str, str]]:
    """Each pin's target: the installed release of its distribution and the hash of its source."""
    return {pin.target: (importlib.metadata.version(pin.dist), pin.digest()) for pin in SOURCE_PINS}


@pytest.mark.parametrize("pin", SOURCE_PINS, ids=lambda pin: pin.target.partition(":")[2])
def test_the_upstream_code_we_rely_on_is_the_code_we_checked(pin: SourcePin) -> None:
    version, digest = importlib.metadata.version(pin.dist), pin.digest()
    checked = ", ".join(sorted(set(pin.checked.values()))) or "none"
    assert digest in pin.checked, (
        f"{pin.dist} {version}: {pin.target} is not the code {pin.ours} was checked against ({pin.dist} "
        f"{checked}). Re-check {pin.ours}, which relies on this: {pin.relies}. Then record its hash in "
        f"tests/server/test_internals.py: {digest!r}: {version!r}."
    )


def parameters(function: Any) -> list[str]:
    return list(inspect.signature(function).parameters)


def changed(upstream: str, ours: str, what: str) -> str:
    return f"{upstream} changed shape: re-check {ours} ({what})"


# ------------------------------------------------------------------------------ uvicorn: the HTTP protocol

# the methods LimitedHttpProtocol overrides or calls, with the parameters it passes
HTTP_METHODS = {
    "connection_made": ["self", "transport"],
    "connection_lost": ["self", "exc"],
    "data_received": ["self", "data"],
    "eof_received": ["self"],
    "send_400_response": ["self", "msg"],
    "on_message_begin": ["self"],
    "on_url": ["self", "url"],
    "on_header": ["self", "name", "value"],
    "on_headers_complete": ["self"],
    "on_body": ["self", "body"],
    "on_message_complete": ["self"],
}


@pytest.mark.parametrize(("name", "expected"), HTTP_METHODS.items(), ids=list(HTTP_METHODS))
def test_the_http_protocol_methods_we_override_keep_their_signatures(name: str, expected: list[str]) -> None:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    method = getattr(HttpToolsProtocol, name, None)
    assert method is not None and parameters(method) == expected, changed(
        f"uvicorn's HttpToolsProtocol.{name}", "aitp.server.http_protocol.LimitedHttpProtocol", "it overrides it"
    )


async def test_the_http_protocol_and_its_cycle_have_the_attributes_we_read() -> None:
    """LimitedHttpProtocol reads the connection's state; a refusal ends the request's cycle."""
    from uvicorn.config import Config
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    from uvicorn.server import ServerState

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await asyncio.Event().wait()  # never answers: the cycle is looked at mid-request

    class Transport:
        def get_extra_info(self, name: str) -> Any:
            return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(name)

        def is_closing(self) -> bool:
            return False

        def write(self, data: bytes) -> None: ...

        def close(self) -> None: ...

        def pause_reading(self) -> None: ...

        def resume_reading(self) -> None: ...

    config = Config(app=app, log_config=None, access_log=False)
    config.load()
    protocol = HttpToolsProtocol(config=config, server_state=ServerState(), app_state={})
    transport = Transport()
    protocol.connection_made(transport)  # type: ignore[arg-type]
    protocol.data_received(b"GET /a HTTP/1.1\r\nHost: aitp\r\n\r\n")
    ours = "aitp.server.http_protocol (LimitedHttpProtocol, _refuse)"
    for name in ("connections", "loop", "logger", "access_logger", "parser"):
        assert hasattr(protocol, name), changed(f"uvicorn's HttpToolsProtocol.{name}", ours, "it reads it")
    assert protocol.transport is transport and protocol in protocol.connections, changed(
        "uvicorn's HttpToolsProtocol.transport/connections", ours, "the connection limit counts connections"
    )
    cycle = protocol.cycle
    assert cycle is not None, changed("uvicorn's HttpToolsProtocol.cycle", ours, "a refusal ends the request's")
    for name, value in {"response_started": False, "response_complete": False, "disconnected": False}.items():
        assert getattr(cycle, name, "missing") == value, changed(f"uvicorn's RequestResponseCycle.{name}", ours, "")
    assert isinstance(cycle.message_event, asyncio.Event) and cycle.scope["method"] == "GET", changed(
        "uvicorn's RequestResponseCycle.message_event/scope", ours, "a refusal wakes the app with a disconnect"
    )
    protocol.connection_lost(None)
    for task in list(protocol.tasks):
        task.cancel()


def access_calls(function: Any) -> list[ast.Call]:
    """The `*.access_logger.info(...)` calls in `function`'s source."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "info"
        and isinstance(node.func.value, ast.Attribute)
        and node.func.value.attr == "access_logger"
    ]


def test_uvicorn_logs_an_access_line_with_the_five_arguments_the_access_log_reads() -> None:
    from uvicorn.config import LOGGING_CONFIG
    from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

    from aitp.server.access_log import UVICORN_FORMAT

    calls = access_calls(RequestResponseCycle.send)
    message = changed(
        "uvicorn's access line (RequestResponseCycle.send)",
        "aitp.server.access_log (AccessLog.line, AccessLogger.info)",
        "they read its five arguments: client, method, path with query, HTTP version, status",
    )
    assert len(calls) == 1, message
    fmt, *args = calls[0].args
    assert isinstance(fmt, ast.Constant) and fmt.value == '%s - "%s %s HTTP/%s" %d' and len(args) == 5, message
    module = ast.parse(inspect.getsource(importlib.import_module(UVICORN_HTTP)))
    used = {
        node.attr
        for node in ast.walk(module)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "access_logger"
    }
    assert used == {"info", "hasHandlers"}, changed(
        f"uvicorn's use of the access logger ({UVICORN_HTTP})",
        "aitp.server.access_log.AccessLogger",
        f"it stands in for the logger after __init__ (hasHandlers) and takes only info(); uvicorn calls {used}",
    )
    assert LOGGING_CONFIG["formatters"]["access"]["fmt"] == UVICORN_FORMAT, changed(
        "uvicorn's access log format", "aitp.server.access_log (UVICORN_FORMAT, AccessLog.line)", "its line copies it"
    )


def test_the_worker_supervisor_is_built_as_serving_builds_it() -> None:
    from uvicorn.config import STARTUP_FAILURE, Config
    from uvicorn.supervisors import Multiprocess

    ours = "aitp.server.serving (serve, WorkerConfig)"
    assert parameters(Multiprocess.__init__) == ["self", "config", "sockets"], changed(
        "uvicorn's Multiprocess", ours, "it is built with a config and the bound socket"
    )
    assert STARTUP_FAILURE == 3, changed("uvicorn's STARTUP_FAILURE", ours, "the exit status of a failed worker")
    for name in ("load", "configure_logging", "bind_socket"):
        assert parameters(getattr(Config, name)) == ["self"], changed(f"uvicorn's Config.{name}", ours, "overridden")
    assert "self.http_protocol_class = self.http" in inspect.getsource(Config.load), changed(
        "uvicorn's Config.load", ours, "a worker's protocol class is set as `http` before load()"
    )


# ------------------------------------------------------------------------------ uvicorn: the WebSocket protocol


def test_the_websocket_protocol_takes_its_transport_in_connection_made() -> None:
    from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

    assert parameters(WebSocketsSansIOProtocol.connection_made) == ["self", "transport"], changed(
        "uvicorn's WebSocketsSansIOProtocol.connection_made", "aitp.server.websocket_protocol", "TurnWrites wraps it"
    )


# ------------------------------------------------------------------------------ FastAPI: the API's route class


def http_route() -> Any:
    """The API's route module, by its name now or before (`aitp.bindings.openai_threads.route` moves)."""
    for name in ("aitp.bindings.http.route", "aitp.bindings.openai_threads.route"):
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError:
            continue
    raise AssertionError("no route module: aitp.bindings.http.route (or aitp.bindings.openai_threads.route)")


def test_fastapi_builds_a_route_from_get_route_handler_and_reads_the_body_through_the_request() -> None:
    """ApiRoute overrides get_route_handler, hands FastAPI a request whose body it read (Request._body) and
    whose JSON it parsed (`json()`), and replaces the route's app for `@served_by` endpoints."""
    import fastapi.routing
    from fastapi.routing import APIRoute

    ours = f"{http_route().__name__} (ApiRoute)"
    assert parameters(APIRoute.get_route_handler) == ["self"], changed(
        "FastAPI's APIRoute.get_route_handler", ours, "it overrides it"
    )
    assert "self.get_route_handler()" in inspect.getsource(APIRoute.__init__), changed(
        "FastAPI's APIRoute.__init__", ours, "the route's app is built from get_route_handler"
    )
    handler = inspect.getsource(fastapi.routing.get_request_handler)
    assert "await request.body()" in handler and "await request.json()" in handler, changed(
        "FastAPI's get_request_handler", ours, "FastAPI reads the body with body() and json(), which ApiRoute answers"
    )

    async def endpoint(body: dict[str, Any]) -> dict[str, Any]:
        return body

    route = APIRoute("/", endpoint, methods=["POST"])
    assert route.body_field is not None and route.dependant is not None, changed(
        "FastAPI's APIRoute.body_field/dependant", ours, "it reads the body's declaration"
    )
    assert route.body_field.field_info.is_required(), changed("FastAPI's body field info", ours, "")


if __name__ == "__main__":  # the hashes of the installed releases, to record once a module is re-checked
    for target, (version, digest) in current_digests().items():
        print(f"{target}\n    {digest!r}: {version!r},")


# ------------------------------------------------------------------------------ Starlette: the request body


async def test_a_request_whose_private_body_is_set_answers_body_and_json_with_it() -> None:
    """ApiRoute reads the body itself and sets Starlette's private `Request._body`; FastAPI's handler then reads
    it through body() and json(). Pinned by behaviour, not by source: it holds on every Starlette release of the
    declared range that keeps it (0.46 to 1.10 today)."""
    from starlette.requests import Request

    async def receive() -> dict[str, Any]:
        raise AssertionError("the stream was read again")

    request = Request({"type": "http", "method": "POST", "headers": [], "path": "/"}, receive)
    request._body = b'{"a": 1}'
    ours = "aitp.bindings.http.route (ApiRoute.get_route_handler)"
    assert await request.body() == b'{"a": 1}', changed("Starlette's Request.body", ours, "reads _body once set")
    assert await request.json() == {"a": 1}, changed("Starlette's Request.json", ours, "reads the body through _body")
