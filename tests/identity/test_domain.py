"""Domain proofs: a compact JWS signed with a published key, answering the service's challenge.

Specification: header {alg: EdDSA | ES256, kid, typ: JWT}, claims {iss, sub (the actor), aud, nonce, iat};
verified with the published key's own algorithm only; iat within 300 s of now; at most 4096 characters.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from aitp.identity import (
    KeyPair,
    ProofRefused,
    document_for,
    generate_keypair,
    keys_for,
    parse_domain_actor,
    proof_key_id,
    sign_domain_proof,
    verify_domain_proof,
)

ACTOR = "example.com/sales"
AUDIENCE = "https://aitp.example.org"
NONCE = "n-7f3a9c"
ED = generate_keypair("ed25519")
P256 = generate_keypair("p256")
KEYS = keys_for(document_for([ED.public_jwk, P256.public_jwk]), parse_domain_actor(ACTOR))


def sign(pair: KeyPair, **changes: Any) -> str:
    return sign_domain_proof(
        pair.private_jwk,
        kid=changes.pop("kid", pair.kid),
        actor=changes.pop("actor", ACTOR),
        audience=changes.pop("audience", AUDIENCE),
        nonce=changes.pop("nonce", NONCE),
        **changes,
    )


def refused(proof: Any, *, keys: dict[str, jwt.PyJWK] = KEYS, **asked: Any) -> ProofRefused:
    with pytest.raises(ProofRefused) as error:
        verify_domain_proof(
            proof,
            keys,
            actor=asked.pop("actor", ACTOR),
            audience=asked.pop("audience", AUDIENCE),
            nonce=asked.pop("nonce", NONCE),
            **asked,
        )
    return error.value


def b64(data: dict[str, Any] | bytes) -> str:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@pytest.mark.parametrize("pair", [ED, P256], ids=["EdDSA", "ES256"])
def test_a_proof_verifies_and_names_its_key(pair: KeyPair) -> None:
    proof = sign(pair)
    header = jwt.get_unverified_header(proof)
    assert header == {"alg": pair.algorithm, "kid": pair.kid, "typ": "JWT"}
    claims = jwt.decode(proof, options={"verify_signature": False})
    assert claims == {"iss": ACTOR, "sub": ACTOR, "aud": AUDIENCE, "nonce": NONCE, "iat": claims["iat"]}
    assert abs(claims["iat"] - time.time()) < 5
    assert proof_key_id(proof) == pair.kid
    assert verify_domain_proof(proof, KEYS, actor=ACTOR, audience=AUDIENCE, nonce=NONCE) == pair.kid


@pytest.mark.parametrize("pair", [ED, P256], ids=["EdDSA", "ES256"])
def test_a_cryptography_private_key_signs_too(pair: KeyPair) -> None:
    proof = sign_domain_proof(pair.private_key, kid=pair.kid, actor=ACTOR, audience=AUDIENCE, nonce=NONCE)
    assert verify_domain_proof(proof, KEYS, actor=ACTOR, audience=AUDIENCE, nonce=NONCE) == pair.kid


def test_other_private_keys_do_not_sign() -> None:
    with pytest.raises(ValueError):
        sign_domain_proof(ec.generate_private_key(ec.SECP384R1()), kid="k", actor=ACTOR, audience="a", nonce="n")


@pytest.mark.parametrize("pair", [ED, P256], ids=["EdDSA", "ES256"])
def test_a_tampered_signature_is_a_bad_signature(pair: KeyPair) -> None:
    head, payload, signature = sign(pair).split(".")
    raw = bytearray(base64.urlsafe_b64decode(signature + "=="))
    raw[5] ^= 1
    assert refused(f"{head}.{payload}.{b64(bytes(raw))}").code == "bad_signature"


def test_a_tampered_payload_is_a_bad_signature() -> None:
    head, _, signature = sign(ED).split(".")
    claims = {"iss": ACTOR, "sub": ACTOR, "aud": AUDIENCE, "nonce": "other", "iat": int(time.time())}
    assert refused(f"{head}.{b64(claims)}.{signature}").code == "bad_signature"


def test_a_key_not_published_for_the_actor_is_refused() -> None:
    other = generate_keypair()
    error = refused(sign(other))
    assert error.code == "key_not_published" and other.kid in error.message


def test_another_key_under_a_published_kid_is_a_bad_signature() -> None:
    impostor = generate_keypair()
    assert refused(sign(impostor, kid=ED.kid)).code == "bad_signature"


def test_a_key_signing_with_another_algorithm_than_its_own_is_a_bad_signature() -> None:
    # an ES256 proof naming the kid of the Ed25519 key
    error = refused(sign(P256, kid=ED.kid))
    assert error.code == "bad_signature" and "EdDSA" in error.message


@pytest.mark.parametrize(
    ("asked", "claim"),
    [
        ({"actor": "example.com/support"}, "iss"),
        ({"audience": "https://elsewhere.example"}, "aud"),
        ({"nonce": "another"}, "nonce"),
    ],
)
def test_a_proof_for_something_else_is_a_claims_mismatch(asked: dict[str, Any], claim: str) -> None:
    error = refused(sign(ED), **asked)
    assert error.code == "claims_mismatch" and claim in error.message


def test_the_nonce_asked_for_is_not_echoed() -> None:
    assert "secret-nonce" not in refused(sign(ED), nonce="secret-nonce").message


def raw_proof(pair: KeyPair, claims: dict[str, Any], **header: Any) -> str:
    return jwt.encode(claims, pair.private_key, algorithm=pair.algorithm, headers={"kid": pair.kid, **header})


def test_a_subject_other_than_the_issuer_is_a_claims_mismatch() -> None:
    claims = {"iss": ACTOR, "sub": "example.com", "aud": AUDIENCE, "nonce": NONCE, "iat": int(time.time())}
    error = refused(raw_proof(ED, claims))
    assert error.code == "claims_mismatch" and "sub" in error.message


@pytest.mark.parametrize("iat", [None, "1700000000", 1.7e9, True])
def test_an_iat_that_is_not_an_integer_is_a_claims_mismatch(iat: Any) -> None:
    claims = {"iss": ACTOR, "sub": ACTOR, "aud": AUDIENCE, "nonce": NONCE}
    if iat is not None:
        claims["iat"] = iat
    assert refused(raw_proof(ED, claims)).code == "claims_mismatch"


def test_iat_may_be_300_seconds_off_and_no_more() -> None:
    proof = sign(ED, now=1_000_000)
    for now in (999_700, 1_000_300):
        assert verify_domain_proof(proof, KEYS, actor=ACTOR, audience=AUDIENCE, nonce=NONCE, now=now) == ED.kid
    for now in (999_699, 1_000_301):  # signed in the future, or too long ago
        assert refused(proof, now=now).code == "claims_mismatch"


def test_an_unsigned_token_is_refused() -> None:
    claims = {"iss": ACTOR, "sub": ACTOR, "aud": AUDIENCE, "nonce": NONCE, "iat": int(time.time())}
    proof = f"{b64({'alg': 'none', 'kid': ED.kid, 'typ': 'JWT'})}.{b64(claims)}."
    assert refused(proof).code == "proof_malformed"
    with pytest.raises(ProofRefused, match="alg"):
        proof_key_id(proof)


@pytest.mark.parametrize("pair", [ED, P256], ids=["EdDSA", "ES256"])
def test_an_hmac_token_keyed_with_the_public_key_is_refused(pair: KeyPair) -> None:
    # the classic confusion: HS256 with the verifier's public key as the shared secret
    claims = {"iss": ACTOR, "sub": ACTOR, "aud": AUDIENCE, "nonce": NONCE, "iat": int(time.time())}
    header = b64({"alg": "HS256", "kid": pair.kid, "typ": "JWT"})
    payload = b64(claims)
    secret = json.dumps(pair.public_jwk).encode()
    signature = b64(hmac.new(secret, f"{header}.{payload}".encode(), hashlib.sha256).digest())
    assert refused(f"{header}.{payload}.{signature}").code == "proof_malformed"


@pytest.mark.parametrize(
    "proof",
    [
        "not a jwt",
        "a.b",
        "a.b.c",
        12,
        None,
        f"{b64({'alg': 'EdDSA', 'typ': 'JWT'})}.{b64({})}.{b64(b'x' * 64)}",  # no kid
        f"{b64({'alg': 'EdDSA', 'kid': 7})}.{b64({})}.{b64(b'x' * 64)}",  # kid not a string
        f"{b64({'alg': 'RS256', 'kid': 'k'})}.{b64({})}.{b64(b'x' * 64)}",
        f"{b64({'alg': 'EdDSA', 'kid': 'k', 'crit': ['exp']})}.{b64({})}.{b64(b'x' * 64)}",
        f"{b64(b'[1]')}.{b64({})}.{b64(b'x' * 64)}",  # header not an object
    ],
)
def test_what_is_not_a_jws_of_this_shape_is_malformed(proof: Any) -> None:
    assert refused(proof).code == "proof_malformed"


@pytest.mark.parametrize("payload", [b"[1, 2]", b"not json"])
def test_a_payload_that_is_not_a_json_object_is_malformed(payload: bytes) -> None:
    proof = jwt.api_jws.encode(payload, ED.private_key, algorithm="EdDSA", headers={"kid": ED.kid})
    assert refused(proof).code == "proof_malformed"


def test_a_proof_over_4096_characters_is_malformed_before_it_is_read() -> None:
    padding = "x" * 4000
    proof = sign(ED, nonce=padding)
    assert len(proof) > 4096
    error = refused(proof, nonce=padding)
    assert error.code == "proof_malformed" and "4096" in error.message
