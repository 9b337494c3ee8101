"""Signing in with an actor's own key (no admin): ask the server for a challenge, sign it, get an API key.

A domain agent (`shop.example.com`) signs with a private key whose public half its host publishes at
`https://shop.example.com/.well-known/aitp.json` (`aitp keys keygen` prints both); a NEAR account signs a
NEP-413 message with one of its full-access keys (`ed25519:...`).
"""

from __future__ import annotations

import base64
from os import PathLike
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeAlias

import httpx

from aitp import __version__
from aitp.client._errors import error_from_response
from aitp.client._http import API_PREFIX, root_url

if TYPE_CHECKING:
    from aitp.identity import KeyPair

# aitp.identity (cryptography, PyJWT, NEAR's encodings: a third of a client-only install) is imported when a key
# signs, not with the client: an agent holding an API key installs none of it (the `identity` extra)
PrivateKey: TypeAlias = "KeyPair | dict[str, Any] | str | bytes | PathLike[str]"
IDENTITY_EXTRA = "pip install 'aitp-thread-service[identity]'"


def _identity() -> ModuleType:
    """`aitp.identity`, or an ImportError saying which extra signing in needs."""
    try:
        import aitp.identity
    except ImportError as error:
        raise ImportError(f"Signing in with a key needs the identity extra ({IDENTITY_EXTRA}): {error}") from error
    return aitp.identity


def _near_key(private_key: PrivateKey) -> str:
    if isinstance(private_key, PathLike):
        private_key = Path(private_key).read_text()
    if isinstance(private_key, bytes):
        private_key = private_key.decode()
    if not isinstance(private_key, str) or not private_key.strip().startswith("ed25519:"):
        raise ValueError("A NEAR account signs with its private key as NEAR writes it: 'ed25519:<base58>'.")
    return private_key.strip()


def _domain_key(private_key: PrivateKey) -> KeyPair:
    identity = _identity()
    if isinstance(private_key, identity.KeyPair):
        return private_key
    if isinstance(private_key, PathLike):
        return identity.load_private_key(Path(private_key).read_text())
    return identity.load_private_key(private_key)


def sign_in_proof(challenge: dict[str, Any], private_key: PrivateKey) -> Any:
    """The `proof` of `POST /v1/auth/token` for a `POST /v1/auth/challenge` answer: a NEP-413 signature for a
    NEAR account, a JWT for a domain agent (what `AitpClient.sign_in` sends)."""
    identity = _identity()
    if challenge["kind"] == "near":
        nonce = base64.urlsafe_b64decode(challenge["nonce"] + "=" * (-len(challenge["nonce"]) % 4))
        key = _near_key(private_key)
        return identity.sign_nep413(key, message=challenge["message"], nonce=nonce, recipient=challenge["recipient"])
    pair = _domain_key(private_key)
    return identity.sign_domain_proof(
        pair.private_jwk,
        kid=pair.kid,
        actor=challenge["actor"],
        audience=challenge["audience"],
        nonce=challenge["nonce"],
    )


async def sign_in(
    base_url: str,
    actor: str,
    private_key: PrivateKey,
    *,
    timeout: float = 30,
    transport: httpx.AsyncBaseTransport | None = None,
) -> dict[str, Any]:
    """The server's `auth.token` answer (`key`, `expires_at`, `verification`) for `actor`, signed in with
    `private_key`; refusals raise `AitpError` (their `code` says which step failed)."""
    headers = {"User-Agent": f"aitp-client/{__version__}"}
    http = httpx.AsyncClient(
        base_url=root_url(base_url) + API_PREFIX, timeout=timeout, transport=transport, headers=headers
    )
    try:
        asked = await http.post("/auth/challenge", json={"actor": actor})
        if not asked.is_success:
            raise error_from_response(asked)
        challenge = asked.json()
        body = {"actor": actor, "nonce": challenge["nonce"], "proof": sign_in_proof(challenge, private_key)}
        answered = await http.post("/auth/token", json=body)
        if not answered.is_success:
            raise error_from_response(answered)
        token: dict[str, Any] = answered.json()
        return token
    finally:
        if transport is None:  # a transport given is the caller's, for the client signed in too: left open
            await http.aclose()
