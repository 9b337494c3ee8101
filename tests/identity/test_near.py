"""NEAR accounts: NEP-413 signed messages, implicit accounts, and full-access keys asked of a JSON-RPC node.

Specification: the signature is ed25519 over sha256(borsh(u32 2**31 + 413) ++ borsh(Payload)); keys are
"ed25519:<base58>"; signatures standard or url-safe base64; the RPC answers yes (FullAccess), no (a
function-call key, no such key, no such account) or cannot tell (near_rpc_unreachable).
"""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import base58
import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from aitp.identity import (
    ProofRefused,
    full_access_key,
    implicit_account_of,
    near_keypair,
    nep413_message,
    sign_nep413,
    verify_nep413,
)
from aitp.identity.near import nep413_hash, private_key_string

# Published in near/near-api-rs (types/src/nep413.rs, tests test_compatibility_with_existing_signer_*): a key
# derived from a seed phrase, its NEP-413 signatures of "Hello NEAR!" for example.near with and without a
# callback URL.
VECTOR_KEY = "ed25519:2RM3EotCzEiVobm6aMjaup43k8cFffR4KHFtrqbZ79Qy"
VECTOR_NONCE = base64.b64decode("KNV0cOpvJ50D5vfF9pqWom8wo2sliQ4W+Wa7uZ3Uk6Y=")
VECTOR_WITHOUT_CALLBACK = "NnJgPU1Ql7ccRTITIoOVsIfElmvH1RV7QAT4a9Vh6ShCOnjIzRwxqX54JzoQ/nK02p7VBMI2vJn48rpImIJwAw=="
VECTOR_WITH_CALLBACK = "zzZQ/GwAjrZVrTIFlvmmQbDQHllfzrr8urVWHaRt5cPfcXaCSZo35c5LDpPpTKivR6BxLyb3lcPM0FfCW5lcBQ=="

MESSAGE = "Sign in to aitp.example.org"
RECIPIENT = "aitp.example.org"
NONCE = bytes(range(32))
PRIVATE, PUBLIC = near_keypair()


def test_the_published_vectors_verify() -> None:
    asked: dict[str, Any] = {"message": "Hello NEAR!", "nonce": VECTOR_NONCE, "recipient": "example.near"}
    proof = {"public_key": VECTOR_KEY, "signature": VECTOR_WITHOUT_CALLBACK}
    assert verify_nep413(proof, **asked) == VECTOR_KEY
    proof = {"public_key": VECTOR_KEY, "signature": VECTOR_WITH_CALLBACK}
    assert verify_nep413(proof, **asked, callback_url="http://localhost:3000") == VECTOR_KEY
    with pytest.raises(ProofRefused) as refused:
        verify_nep413(proof, **asked)  # the signature covers the callback URL
    assert refused.value.code == "bad_signature"


def hand_encoded(message: str, nonce: bytes, recipient: str, callback_url: str | None) -> bytes:
    """Borsh by hand: u32 little-endian; strings as a u32 length then UTF-8; [u8; 32] as is; an Option as a
    0 or 1 byte, then the value."""

    def string(text: str) -> bytes:
        data = text.encode()
        return struct.pack("<I", len(data)) + data

    option = b"\x00" if callback_url is None else b"\x01" + string(callback_url)
    return struct.pack("<I", 2**31 + 413) + string(message) + nonce + string(recipient) + option


@pytest.mark.parametrize("callback_url", [None, "https://aitp.example.org/callback"])
def test_the_signed_bytes_are_the_borsh_encoding(callback_url: str | None) -> None:
    message = "Grüße, ✓"  # multi-byte UTF-8: lengths count bytes
    encoded = nep413_message(message=message, nonce=NONCE, recipient=RECIPIENT, callback_url=callback_url)
    assert encoded == hand_encoded(message, NONCE, RECIPIENT, callback_url)
    assert encoded[:4] == bytes.fromhex("9d010080")
    digest = nep413_hash(message=message, nonce=NONCE, recipient=RECIPIENT, callback_url=callback_url)
    assert digest == hashlib.sha256(encoded).digest()


def test_a_nonce_is_32_bytes() -> None:
    with pytest.raises(ValueError):
        nep413_message(message=MESSAGE, nonce=b"short", recipient=RECIPIENT)


@pytest.mark.parametrize("callback_url", [None, "https://aitp.example.org/callback"])
def test_a_signed_message_verifies(callback_url: str | None) -> None:
    asked: dict[str, Any] = {"message": MESSAGE, "nonce": NONCE, "recipient": RECIPIENT, "callback_url": callback_url}
    proof = sign_nep413(PRIVATE, **asked)
    assert proof["public_key"] == PUBLIC
    assert len(base64.b64decode(proof["signature"], validate=True)) == 64
    assert verify_nep413(proof, **asked) == PUBLIC


def test_a_seed_or_a_key_object_signs_too() -> None:
    key = Ed25519PrivateKey.generate()
    seed_only = "ed25519:" + base58.b58encode(key.private_bytes_raw()).decode()
    from_seed = sign_nep413(seed_only, message=MESSAGE, nonce=NONCE, recipient=RECIPIENT)
    from_key = sign_nep413(key, message=MESSAGE, nonce=NONCE, recipient=RECIPIENT)
    from_pair = sign_nep413(private_key_string(key), message=MESSAGE, nonce=NONCE, recipient=RECIPIENT)
    assert from_seed == from_key == from_pair  # ed25519 signatures are deterministic


def test_a_wallets_answer_verifies_as_it_is() -> None:
    signed = sign_nep413(PRIVATE, message=MESSAGE, nonce=NONCE, recipient=RECIPIENT)
    answer = {"accountId": "alice.near", "publicKey": signed["public_key"], "signature": signed["signature"]}
    assert verify_nep413(answer, message=MESSAGE, nonce=NONCE, recipient=RECIPIENT) == PUBLIC


def test_url_safe_and_unpadded_base64_signatures_are_accepted() -> None:
    signed = sign_nep413(PRIVATE, message=MESSAGE, nonce=NONCE, recipient=RECIPIENT)
    raw = base64.b64decode(signed["signature"])
    for signature in (base64.urlsafe_b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode().rstrip("=")):
        proof = {"public_key": PUBLIC, "signature": signature}
        assert verify_nep413(proof, message=MESSAGE, nonce=NONCE, recipient=RECIPIENT) == PUBLIC


def refused(proof: Any, **asked: Any) -> ProofRefused:
    with pytest.raises(ProofRefused) as error:
        verify_nep413(
            proof,
            message=asked.get("message", MESSAGE),
            nonce=asked.get("nonce", NONCE),
            recipient=asked.get("recipient", RECIPIENT),
        )
    return error.value


def test_a_tampered_signature_is_a_bad_signature() -> None:
    signed = sign_nep413(PRIVATE, message=MESSAGE, nonce=NONCE, recipient=RECIPIENT)
    raw = bytearray(base64.b64decode(signed["signature"]))
    raw[0] ^= 1
    assert refused({**signed, "signature": base64.b64encode(bytes(raw)).decode()}).code == "bad_signature"


@pytest.mark.parametrize(
    "asked", [{"message": "Another message"}, {"nonce": bytes(32)}, {"recipient": "elsewhere.example.org"}]
)
def test_a_signature_of_something_else_is_a_bad_signature(asked: dict[str, Any]) -> None:
    signed = sign_nep413(PRIVATE, message=MESSAGE, nonce=NONCE, recipient=RECIPIENT)
    assert refused(signed, **asked).code == "bad_signature"


def test_a_signature_by_another_key_is_a_bad_signature() -> None:
    signed = sign_nep413(PRIVATE, message=MESSAGE, nonce=NONCE, recipient=RECIPIENT)
    assert refused({**signed, "public_key": near_keypair()[1]}).code == "bad_signature"


SIGNATURE = base64.b64encode(bytes(64)).decode()


@pytest.mark.parametrize(
    "proof",
    [
        "a string",
        None,
        {"signature": SIGNATURE},
        {"public_key": PUBLIC},
        {"public_key": PUBLIC.removeprefix("ed25519:"), "signature": SIGNATURE},
        {"public_key": "secp256k1:" + PUBLIC.removeprefix("ed25519:"), "signature": SIGNATURE},
        {"public_key": "ed25519:0OIl", "signature": SIGNATURE},  # not base58
        {"public_key": "ed25519:" + "2" * 20, "signature": SIGNATURE},  # not 32 bytes
        {"public_key": "ed25519:" + "2" * 5000, "signature": SIGNATURE},
        {"public_key": PUBLIC, "signature": "not base64!"},
        {"public_key": PUBLIC, "signature": base64.b64encode(bytes(63)).decode()},
        {"public_key": PUBLIC, "signature": 64},
        {"public_key": PUBLIC, "publicKey": near_keypair()[1], "signature": SIGNATURE},
    ],
)
def test_a_proof_of_another_shape_is_malformed(proof: Any) -> None:
    assert refused(proof).code == "proof_malformed"


def test_an_implicit_account_is_its_public_key_in_hex() -> None:
    assert implicit_account_of(VECTOR_KEY) == base58.b58decode(VECTOR_KEY.removeprefix("ed25519:")).hex()
    assert len(implicit_account_of(PUBLIC)) == 64
    with pytest.raises(ProofRefused) as refused_key:
        implicit_account_of("ed25519:nope")
    assert refused_key.value.code == "proof_malformed"


def test_private_keys_are_checked_when_read() -> None:
    private, _ = near_keypair()
    _, other = near_keypair()
    raw = base58.b58decode(private.removeprefix("ed25519:"))
    mismatched = "ed25519:" + base58.b58encode(raw[:32] + base58.b58decode(other.removeprefix("ed25519:"))).decode()
    for bad in (mismatched, "ed25519:" + base58.b58encode(raw[:20]).decode(), "secp256k1:abc", "ed25519:0"):
        with pytest.raises(ValueError) as error:
            sign_nep413(bad, message=MESSAGE, nonce=NONCE, recipient=RECIPIENT)
        assert raw[:32].hex() not in str(error.value)


# --- the RPC: a JSON-RPC node of the test's own on a loopback port


class Rpc:
    """A NEAR JSON-RPC node stand-in: answers each POST with `answer(request)`: (status, body)."""

    def __init__(self) -> None:
        self.requests: list[Any] = []
        self.answer: Callable[[Any], tuple[int, bytes]] = lambda request: (500, b"not set")
        rpc = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the name http.server calls)
                request = json.loads(self.rfile.read(int(self.headers["content-length"])))
                rpc.requests.append(request)
                status, body = rpc.answer(request)
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def result(self, result: Any, status: int = 200) -> None:
        self.answer = lambda request: (
            status,
            json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode(),
        )

    def error(self, error: Any, status: int = 200) -> None:
        self.answer = lambda request: (
            status,
            json.dumps({"jsonrpc": "2.0", "id": request["id"], "error": error}).encode(),
        )


@pytest.fixture
def rpc() -> Iterator[Rpc]:
    node = Rpc()
    thread = threading.Thread(target=node.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield node
    finally:
        node.server.shutdown()
        node.server.server_close()


BLOCK = {"block_height": 1, "block_hash": "11111111111111111111111111111111"}


async def ask(url: str, account: str = "alice.near", key: str = PUBLIC, timeout: float = 2.0) -> bool:
    async with httpx.AsyncClient(trust_env=False) as client:
        return await full_access_key(url, account, key, client=client, timeout=timeout)


async def unreachable(url: str) -> ProofRefused:
    with pytest.raises(ProofRefused) as error:
        await ask(url)
    assert error.value.code == "near_rpc_unreachable"
    return error.value


async def test_a_full_access_key_is_a_yes(rpc: Rpc) -> None:
    rpc.result({"nonce": 85, "permission": "FullAccess", **BLOCK})
    assert await ask(rpc.url) is True
    assert rpc.requests == [
        {
            "jsonrpc": "2.0",
            "id": "aitp",
            "method": "query",
            "params": {
                "request_type": "view_access_key",
                "finality": "final",
                "account_id": "alice.near",
                "public_key": PUBLIC,
            },
        }
    ]


@pytest.mark.parametrize(
    "permission",
    [
        {"FunctionCall": {"allowance": "100", "receiver_id": "app.near", "method_names": []}},
        {"GasKeyFullAccess": {"balance": "1", "num_nonces": 4}},  # a newer kind: not a plain full-access key
    ],
)
async def test_other_permissions_are_a_no(rpc: Rpc, permission: dict[str, Any]) -> None:
    rpc.result({"nonce": 3, "permission": permission, **BLOCK})
    assert await ask(rpc.url) is False


@pytest.mark.parametrize("name", ["UNKNOWN_ACCESS_KEY", "UNKNOWN_ACCOUNT"])
async def test_no_such_key_or_account_is_a_no(rpc: Rpc, name: str) -> None:
    rpc.error({"name": "HANDLER_ERROR", "cause": {"name": name, "info": {}}, "code": -32000, "message": "Server error"})
    assert await ask(rpc.url) is False


@pytest.mark.parametrize(
    "text", [f"access key {PUBLIC} does not exist while viewing", "account alice.near does not exist while viewing"]
)
async def test_no_such_key_in_the_compatible_result_form_is_a_no(rpc: Rpc, text: str) -> None:
    rpc.result({"error": text, "logs": [], **BLOCK})
    assert await ask(rpc.url) is False


async def test_no_such_key_from_nodes_before_structured_errors_is_a_no(rpc: Rpc) -> None:
    rpc.error({"code": -32000, "message": "Server error", "data": f"access key {PUBLIC} does not exist while viewing"})
    assert await ask(rpc.url) is False


async def test_a_server_error_is_unreachable(rpc: Rpc) -> None:
    rpc.answer = lambda request: (500, b"Internal Server Error")
    assert "500" in (await unreachable(rpc.url)).message


@pytest.mark.parametrize(
    "answer",
    [
        {"error": {"name": "HANDLER_ERROR", "cause": {"name": "UNKNOWN_BLOCK", "info": {}}, "code": -32000}},
        {"error": {"name": "INTERNAL_ERROR", "cause": {"name": "INTERNAL_ERROR", "info": {}}, "code": -32000}},
        {"error": "busy"},
        {"result": {"error": "wasm execution failed", "logs": []}},
        {"result": {"nonce": 1, "permission": "Owner"}},
        {"result": {"nonce": 1, "permission": {}}},
        {"result": {"nonce": 1}},
        {"result": "FullAccess"},
        ["not", "an", "object"],
    ],
)
async def test_any_other_answer_is_unreachable(rpc: Rpc, answer: Any) -> None:
    rpc.answer = lambda request: (200, json.dumps(answer).encode())
    await unreachable(rpc.url)


async def test_an_answer_over_64_kib_is_unreachable(rpc: Rpc) -> None:
    rpc.result({"permission": "FullAccess", "padding": "x" * 70_000})
    assert "larger" in (await unreachable(rpc.url)).message


async def test_a_node_that_is_down_is_unreachable() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    await unreachable(f"http://127.0.0.1:{port}")


async def test_a_node_that_never_answers_is_unreachable_within_the_timeout() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()  # connections complete in the backlog; nothing ever reads them
        started = time.monotonic()
        with pytest.raises(ProofRefused) as error:
            await ask(f"http://127.0.0.1:{silent.getsockname()[1]}", timeout=0.5)
        assert error.value.code == "near_rpc_unreachable"
        assert time.monotonic() - started < 2


async def test_the_account_and_key_are_checked_before_asking(rpc: Rpc) -> None:
    with pytest.raises(ProofRefused) as error:
        await ask(rpc.url, account="alice")
    assert error.value.code == "invalid_actor_id"
    with pytest.raises(ProofRefused) as error:
        await ask(rpc.url, key="ed25519:nope")
    assert error.value.code == "proof_malformed"
    assert rpc.requests == []
