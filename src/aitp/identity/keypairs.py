"""Signing keys for an agent: made, loaded, and written as JWKs (to publish) or NEAR strings.

A domain agent keeps `private_jwk` secret, publishes `public_jwk` in its `/.well-known/aitp.json`, and signs
its proofs with the pair (`aitp.identity.domain`). A key's default `kid` is its RFC 7638 thumbprint, so the
same key always gets the same id.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Literal

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from jwt.algorithms import ECAlgorithm, OKPAlgorithm

from aitp.identity.documents import algorithm_of
from aitp.identity.near import private_key_string, public_key_string

PrivateKey = Ed25519PrivateKey | ec.EllipticCurvePrivateKey
# the members RFC 7638 hashes, per key type (§3.2; RFC 8037 §2 for OKP)
_THUMBPRINT_MEMBERS = {"OKP": ("crv", "kty", "x"), "EC": ("crv", "kty", "x", "y")}


@dataclass(frozen=True)
class KeyPair:
    """A signing key: `private_jwk` (with "d": secret), `public_jwk` (to publish), both carrying `kid`."""

    private_jwk: dict[str, Any]
    public_jwk: dict[str, Any]
    kid: str

    @property
    def algorithm(self) -> Literal["EdDSA", "ES256"]:
        return "EdDSA" if self.public_jwk["kty"] == "OKP" else "ES256"

    @property
    def private_key(self) -> PrivateKey:
        return private_key_of(self.private_jwk)


def thumbprint(jwk: dict[str, Any]) -> str:
    """The RFC 7638 SHA-256 thumbprint of an Ed25519 or P-256 JWK, base64url without padding."""
    members = _THUMBPRINT_MEMBERS.get(jwk["kty"]) if algorithm_of(jwk) else None
    if members is None:
        raise ValueError("Only OKP (Ed25519) and EC (P-256) keys are supported.")
    canonical = json.dumps({m: jwk[m] for m in members}, separators=(",", ":"), sort_keys=True)
    return base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()


def supported_private_key(key: Any) -> PrivateKey:
    """`key` if it is an Ed25519 or P-256 private key; ValueError otherwise."""
    if isinstance(key, Ed25519PrivateKey):
        return key
    if isinstance(key, ec.EllipticCurvePrivateKey) and isinstance(key.curve, ec.SECP256R1):
        return key
    raise ValueError("Only Ed25519 and P-256 private keys are supported.")


def _pair(key: PrivateKey, kid: str | None) -> KeyPair:
    if isinstance(key, Ed25519PrivateKey):
        private = OKPAlgorithm.to_jwk(key, as_dict=True)
        public = OKPAlgorithm.to_jwk(key.public_key(), as_dict=True)
    else:
        private = ECAlgorithm.to_jwk(key, as_dict=True)
        public = ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
    kid = kid if kid is not None else thumbprint(public)
    return KeyPair({**private, "kid": kid}, {**public, "kid": kid}, kid)


def private_key_of(jwk: dict[str, Any]) -> PrivateKey:
    """The private key of a private JWK (Ed25519 or P-256); ValueError otherwise, without the key's value."""
    if not isinstance(jwk, dict) or "d" not in jwk:
        raise ValueError('Not a private JWK (no "d").')
    algorithm = algorithm_of(jwk)
    if algorithm is None:
        raise ValueError("Only Ed25519 (OKP) and P-256 (EC) JWKs are supported.")
    try:
        key = jwt.PyJWK(jwk, algorithm=algorithm).key
    except (jwt.PyJWKError, jwt.InvalidKeyError, ValueError, TypeError) as error:
        raise ValueError(f"Not a valid {jwk['crv']} private JWK.") from error
    return supported_private_key(key)


def generate_keypair(kind: Literal["ed25519", "p256"] = "ed25519", kid: str | None = None) -> KeyPair:
    """A new key pair; its kid is `kid`, else its thumbprint."""
    if kind == "ed25519":
        return _pair(Ed25519PrivateKey.generate(), kid)
    if kind == "p256":
        return _pair(ec.generate_private_key(ec.SECP256R1()), kid)
    raise ValueError(f"Unknown key kind {kind!r}: 'ed25519' or 'p256'.")


def load_private_key(data: str | bytes | dict[str, Any]) -> KeyPair:
    """A key pair from a private JWK (a dict, or its JSON text) or a PEM private key (PKCS#8 or SEC1), Ed25519
    or P-256, unencrypted. A JWK keeps its kid; otherwise the kid is the key's thumbprint."""
    if isinstance(data, dict):
        kid = data.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise ValueError("The JWK's kid is not a string.")
        return _pair(private_key_of(data), kid)
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            jwk = json.loads(stripped)
        except ValueError as error:
            raise ValueError("Not valid JSON for a JWK.") from error
        return load_private_key(jwk)
    if stripped.startswith("-----BEGIN"):
        try:
            key = serialization.load_pem_private_key(stripped.encode(), password=None)
        except TypeError as error:
            raise ValueError("The PEM key is encrypted; give it unencrypted.") from error
        except ValueError as error:
            raise ValueError("Not a valid PEM private key.") from error
        return _pair(supported_private_key(key), None)
    raise ValueError("Not a private JWK or a PEM private key.")


def near_keypair() -> tuple[str, str]:
    """A new NEAR key pair as NEAR writes it: ("ed25519:<private>", "ed25519:<public>")."""
    key = Ed25519PrivateKey.generate()
    return private_key_string(key), public_key_string(key)
