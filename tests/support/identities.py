"""Actors that prove who they are, for tests: a domain's key document served on loopback, a NEAR RPC of the
test's own, and signing in through the real HTTP routes (`POST /v1/auth/challenge`, `/v1/auth/token`)."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from aitp.client import sign_in_proof
from aitp.identity import KeyPair, document_for


class KeySite:
    """A host on loopback publishing `/.well-known/aitp.json`: `keys` (replace to change what it publishes),
    `headers` (its caching headers), `body` (raw bytes instead, e.g. too large). Its actor id is `host`."""

    def __init__(self) -> None:
        self.keys: list[KeyPair] = []
        self.headers: dict[str, str] = {"cache-control": "max-age=300"}
        self.body: bytes | None = None
        self.gets = 0
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (the name http.server calls)
                site.gets += 1
                if self.path != "/.well-known/aitp.json":
                    self.send_error(404)
                    return
                body = site.body
                if body is None:
                    body = json.dumps(document_for([pair.public_jwk for pair in site.keys])).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                for name, value in site.headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:
                    pass  # a refused (too large) body is not read to its end

            def log_message(self, format: str, *args: Any) -> None:
                pass

        # `localhost` may resolve to ::1 first: the same port there too, where the machine has IPv6
        self.servers = [ThreadingHTTPServer(("127.0.0.1", 0), Handler)]
        port = self.servers[0].server_address[1]

        class V6(ThreadingHTTPServer):
            address_family = socket.AF_INET6

        with contextlib.suppress(OSError):
            self.servers.append(V6(("::1", port), Handler))
        self.host = f"localhost:{port}"
        self.allow = f"http://{self.host}/"  # AITP_IDENTITY_ALLOW: loopback, over plain http
        for server in self.servers:
            server.daemon_threads = True
            threading.Thread(target=server.serve_forever, daemon=True).start()

    def close(self) -> None:
        for server in self.servers:
            server.shutdown()
            server.server_close()


class NearRpc:
    """A NEAR JSON-RPC endpoint on loopback answering `view_access_key`: `keys` maps (account, public key) to
    "FullAccess" or a function-call permission; anything else is an unknown key."""

    def __init__(self) -> None:
        self.keys: dict[tuple[str, str], Any] = {}
        rpc = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                request = json.loads(self.rfile.read(int(self.headers["content-length"])))
                params = request["params"]
                permission = rpc.keys.get((params["account_id"], params["public_key"]))
                if permission is None:
                    answer = {
                        "jsonrpc": "2.0",
                        "id": request["id"],
                        "error": {
                            "name": "HANDLER_ERROR",
                            "cause": {"name": "UNKNOWN_ACCESS_KEY", "info": {"public_key": params["public_key"]}},
                            "code": -32000,
                            "message": "Server error",
                        },
                    }
                else:
                    answer = {
                        "jsonrpc": "2.0",
                        "id": request["id"],
                        "result": {"nonce": 1, "permission": permission, "block_height": 1, "block_hash": "x"},
                    }
                body = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def key_site() -> Iterator[KeySite]:
    site = KeySite()
    try:
        yield site
    finally:
        site.close()


@contextmanager
def near_rpc() -> Iterator[NearRpc]:
    rpc = NearRpc()
    try:
        yield rpc
    finally:
        rpc.close()


def domain_proof(challenge: dict[str, Any], pair: KeyPair) -> str:
    """A domain agent's proof for `challenge`, as the Python client makes it."""
    return str(sign_in_proof(challenge, pair))


def near_proof(challenge: dict[str, Any], private_key: str) -> dict[str, str]:
    """A NEAR account's proof for `challenge`, as the Python client makes it."""
    proof: dict[str, str] = sign_in_proof(challenge, private_key)
    return proof


async def challenge(client: httpx.AsyncClient, actor: str) -> dict[str, Any]:
    """`POST /auth/challenge` (no key), asserted to succeed."""
    response = await client.post("/auth/challenge", json={"actor": actor})
    assert response.status_code == 200, response.text
    return response.json()


async def token(client: httpx.AsyncClient, challenge: dict[str, Any], proof: Any) -> httpx.Response:
    body = {"actor": challenge["actor"], "nonce": challenge["nonce"], "proof": proof}
    return await client.post("/auth/token", json=body)


async def sign_in_domain(client: httpx.AsyncClient, actor: str, pair: KeyPair) -> str:
    """A key of the domain actor `actor`, signed in with `pair` (published by its site)."""
    issued = await challenge(client, actor)
    response = await token(client, issued, domain_proof(issued, pair))
    assert response.status_code == 200, response.text
    return str(response.json()["key"])


async def sign_in_near(client: httpx.AsyncClient, actor: str, private_key: str) -> str:
    issued = await challenge(client, actor)
    response = await token(client, issued, near_proof(issued, private_key))
    assert response.status_code == 200, response.text
    return str(response.json()["key"])
