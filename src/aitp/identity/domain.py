"""Domain agents prove who they are with a compact JWS (a JWT) signed by a key their domain publishes.

Header `{"alg": "EdDSA" | "ES256", "kid": <a published kid>, "typ": "JWT"}`; claims
`{"iss": <actor id>, "sub": <actor id>, "aud": <the audience asked>, "nonce": <the nonce asked>, "iat": <now>}`.
The verifier finds the key by `kid` among those published for the actor (`aitp.identity.documents`), checks
the signature with the algorithm the key is for (never the one the token names: no `none`, no HMAC with a
public key), then that the claims answer what it asked, and that `iat` is within 5 minutes of now.
"""

from __future__ import annotations

import json
import time
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec

from aitp.identity.keypairs import PrivateKey, private_key_of, supported_private_key
from aitp.identity.refusals import ProofRefused

ALGORITHMS = ("EdDSA", "ES256")
MAX_PROOF = 4096  # characters: two small JSON objects and a 64-byte signature fit many times over
MAX_SKEW = 300  # seconds between `iat` and now, either way
_JWS = jwt.PyJWS(algorithms=list(ALGORITHMS))


def sign_domain_proof(
    private_jwk: dict[str, Any] | PrivateKey,
    *,
    kid: str,
    actor: str,
    audience: str,
    nonce: str,
    now: float | None = None,
) -> str:
    """A proof that `actor` holds the key `kid`, for `audience`'s challenge `nonce`."""
    key = private_key_of(private_jwk) if isinstance(private_jwk, dict) else supported_private_key(private_jwk)
    algorithm = "ES256" if isinstance(key, ec.EllipticCurvePrivateKey) else "EdDSA"
    issued_at = int(time.time() if now is None else now)
    claims = {"iss": actor, "sub": actor, "aud": audience, "nonce": nonce, "iat": issued_at}
    return jwt.encode(claims, key, algorithm=algorithm, headers={"kid": kid, "typ": "JWT"})


def _malformed(message: str) -> ProofRefused:
    return ProofRefused("proof_malformed", f"The proof is not a signed JWT of this service's shape: {message}")


def _header(proof: Any) -> dict[str, Any]:
    if not isinstance(proof, str):
        raise _malformed("it is not a string.")
    if len(proof) > MAX_PROOF:
        raise _malformed(f"it is longer than {MAX_PROOF} characters.")
    try:
        header = _JWS.get_unverified_header(proof)
    except jwt.PyJWTError as error:
        raise _malformed("it is not a compact JWS (header.payload.signature, base64url).") from error
    if header.get("alg") not in ALGORITHMS:
        raise _malformed(f"its alg must be one of {', '.join(ALGORITHMS)}.")
    if "crit" in header or header.get("b64", True) is not True:
        raise _malformed("it asks for JWS extensions (crit, b64) this service does not use.")
    return header


def _kid_and_alg(proof: Any) -> tuple[str, str]:
    header = _header(proof)
    kid = header.get("kid")
    if not isinstance(kid, str) or not kid:
        raise _malformed("its header has no kid.")
    return kid, header["alg"]


def proof_key_id(proof: str) -> str:
    """The `kid` a proof names (read before its signature is checked, to find the key)."""
    return _kid_and_alg(proof)[0]


def verify_domain_proof(
    proof: str,
    keys: dict[str, jwt.PyJWK],
    *,
    actor: str,
    audience: str,
    nonce: str,
    now: float | None = None,
) -> str:
    """Check a proof against the keys published for `actor` (by kid) and the challenge; the kid used."""
    kid, algorithm = _kid_and_alg(proof)
    key = keys.get(kid)
    if key is None:
        raise ProofRefused("key_not_published", f"The key {kid[:128]!r} is not among the keys published for {actor}.")
    if key.algorithm_name != algorithm:
        raise ProofRefused(
            "bad_signature", f"The key {kid!r} signs with {key.algorithm_name}, but the proof names {algorithm}."
        )
    try:
        decoded = _JWS.decode_complete(proof, key.key, algorithms=[key.algorithm_name])
    except jwt.InvalidSignatureError as error:
        raise ProofRefused("bad_signature", f"The proof's signature does not verify with the key {kid!r}.") from error
    except jwt.PyJWTError as error:
        raise _malformed("its signature could not be read.") from error
    try:
        claims = json.loads(decoded["payload"])
    except ValueError as error:
        raise _malformed("its payload is not JSON.") from error
    if not isinstance(claims, dict):
        raise _malformed("its payload is not a JSON object.")
    _check_claims(claims, actor=actor, audience=audience, nonce=nonce, now=time.time() if now is None else now)
    return kid


def _check_claims(claims: dict[str, Any], *, actor: str, audience: str, nonce: str, now: float) -> None:
    for name, expected in (("iss", actor), ("sub", actor), ("aud", audience)):
        if claims.get(name) != expected:
            raise ProofRefused("claims_mismatch", f"The proof's {name} is not {expected!r}.")
    if claims.get("nonce") != nonce:
        raise ProofRefused("claims_mismatch", "The proof's nonce is not the one of this challenge.")
    issued_at = claims.get("iat")
    if not isinstance(issued_at, int) or isinstance(issued_at, bool):
        raise ProofRefused("claims_mismatch", "The proof has no iat (issued at, in seconds since the epoch).")
    if abs(issued_at - now) > MAX_SKEW:
        raise ProofRefused(
            "claims_mismatch", f"The proof's iat is more than {MAX_SKEW} s from this service's clock; sign a new one."
        )
