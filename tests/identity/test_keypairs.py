"""Key pairs: made, loaded from a JWK or a PEM, and written as JWKs or NEAR key strings.

Specification: a public JWK never carries "d"; the default kid is the RFC 7638 thumbprint; loading accepts a
private JWK (dict or JSON) or an unencrypted PEM, Ed25519 or P-256 only.
"""

from __future__ import annotations

import json

import base58
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from aitp.identity import (
    document_for,
    generate_keypair,
    implicit_account_of,
    keys_for,
    load_private_key,
    near_keypair,
    parse_domain_actor,
    thumbprint,
)
from aitp.identity.near import parse_private_key


@pytest.mark.parametrize(("kind", "kty", "algorithm"), [("ed25519", "OKP", "EdDSA"), ("p256", "EC", "ES256")])
def test_a_generated_pair_has_a_private_and_a_public_jwk(kind: str, kty: str, algorithm: str) -> None:
    pair = generate_keypair(kind)  # type: ignore[arg-type]
    assert pair.public_jwk["kty"] == kty and "d" not in pair.public_jwk
    assert "d" in pair.private_jwk
    assert pair.kid == pair.public_jwk["kid"] == pair.private_jwk["kid"] == thumbprint(pair.public_jwk)
    assert pair.algorithm == algorithm
    assert {k: v for k, v in pair.private_jwk.items() if k != "d"} == pair.public_jwk


def test_p256_coordinates_are_written_at_full_length() -> None:
    # RFC 7518 §6.2.1.2: 32 bytes even when the first is 0 (one key in 256), as key documents are read
    key = ec.generate_private_key(ec.SECP256R1())
    while key.public_key().public_numbers().x >= 2**248:  # until x's first byte is 0
        key = ec.generate_private_key(ec.SECP256R1())
    pair = load_private_key(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    assert len(pair.public_jwk["x"]) == len(pair.public_jwk["y"]) == 43
    assert set(keys_for(document_for([pair.public_jwk]), parse_domain_actor("example.com"))) == {pair.kid}


def test_a_kid_may_be_chosen() -> None:
    assert generate_keypair(kid="2025-01").public_jwk["kid"] == "2025-01"


def test_other_kinds_are_not_generated() -> None:
    with pytest.raises(ValueError):
        generate_keypair("rsa")  # type: ignore[arg-type]


def test_the_thumbprint_is_rfc_7638s() -> None:
    # RFC 8037, appendix A.3: the thumbprint of the Ed25519 key of appendix A.2
    jwk = {"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}
    assert thumbprint(jwk) == "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
    assert thumbprint({**jwk, "kid": "other", "use": "sig"}) == thumbprint(jwk)  # only the required members


def test_a_private_jwk_loads_as_a_dict_or_as_json_text() -> None:
    pair = generate_keypair("p256", kid="mine")
    assert load_private_key(pair.private_jwk) == pair
    assert load_private_key(json.dumps(pair.private_jwk)) == pair
    assert load_private_key(json.dumps(pair.private_jwk).encode()) == pair
    without_kid = {k: v for k, v in pair.private_jwk.items() if k != "kid"}
    assert load_private_key(without_kid).kid == thumbprint(pair.public_jwk)


def test_pem_private_keys_load() -> None:
    ed = Ed25519PrivateKey.generate()
    pkcs8 = ed.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    assert load_private_key(pkcs8.decode()).public_jwk["kty"] == "OKP"
    p256 = ec.generate_private_key(ec.SECP256R1())
    sec1 = p256.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )
    assert b"BEGIN EC PRIVATE KEY" in sec1
    loaded = load_private_key(sec1)
    assert loaded.public_jwk["crv"] == "P-256" and loaded.kid == thumbprint(loaded.public_jwk)


@pytest.mark.parametrize(
    "data",
    [
        generate_keypair().public_jwk,  # no private part
        {"kty": "EC", "crv": "P-384", "x": "a", "y": "b", "d": "c"},
        {"kty": "OKP", "crv": "Ed25519", "x": "a", "d": "not a key"},
        "{not json",
        "a key",
        "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n",
        {**generate_keypair().private_jwk, "kid": 7},
        ec.generate_private_key(ec.SECP384R1())
        .private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        .decode(),
        rsa.generate_private_key(public_exponent=65537, key_size=1024)
        .private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        .decode(),
        Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"secret"),
        ),
    ],
)
def test_other_keys_are_refused(data: object) -> None:
    with pytest.raises(ValueError):
        load_private_key(data)  # type: ignore[arg-type]


def test_a_near_key_pair_is_written_as_near_writes_it() -> None:
    private, public = near_keypair()
    assert private.startswith("ed25519:") and public.startswith("ed25519:")
    raw = base58.b58decode(private.removeprefix("ed25519:"))
    assert len(raw) == 64 and raw[32:] == base58.b58decode(public.removeprefix("ed25519:"))
    assert implicit_account_of(public) == raw[32:].hex()
    assert parse_private_key(private).private_bytes_raw() == raw[:32]
