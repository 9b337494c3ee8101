"""The key document (`/.well-known/aitp.json`): which published keys sign for which agent of a domain.

Specification: top-level keys sign for the host and every agent path under it; an agent path's keys sign for
that exact path only; every key has a unique kid; a private key makes the document invalid; unknown key types
are skipped; at most 32 keys and 64 agent paths, checked before any key is parsed; an actor needs a usable key.
"""

from __future__ import annotations

from typing import Any

import pytest

from aitp.identity import ProofRefused, document_for, generate_keypair, keys_for, parse_domain_actor

HOST = generate_keypair("ed25519", kid="host")
SALES = generate_keypair("p256", kid="sales")
EU = generate_keypair("ed25519", kid="eu")
DOCUMENT = document_for([HOST.public_jwk], {"/sales": [SALES.public_jwk], "/sales/eu": [EU.public_jwk]})


def invalid(document: Any, actor: str = "example.com") -> str:
    with pytest.raises(ProofRefused) as refused:
        keys_for(document, parse_domain_actor(actor))
    assert refused.value.code == "well_known_invalid"
    return refused.value.message


def test_the_host_agent_gets_the_top_level_keys_only() -> None:
    assert set(keys_for(DOCUMENT, parse_domain_actor("example.com"))) == {"host"}


def test_an_agent_path_gets_the_top_level_keys_and_its_own() -> None:
    keys = keys_for(DOCUMENT, parse_domain_actor("example.com/sales"))
    assert set(keys) == {"host", "sales"}
    assert keys["sales"].algorithm_name == "ES256" and keys["host"].algorithm_name == "EdDSA"


def test_agent_paths_match_exactly_not_by_prefix() -> None:
    assert set(keys_for(DOCUMENT, parse_domain_actor("example.com/sales/eu"))) == {"host", "eu"}
    assert set(keys_for(DOCUMENT, parse_domain_actor("example.com/support"))) == {"host"}


def test_a_document_with_agent_keys_only_gives_other_agents_nothing() -> None:
    document = document_for([], {"/sales": [SALES.public_jwk]})
    assert set(keys_for(document, parse_domain_actor("example.com/sales"))) == {"sales"}
    assert "no usable key for example.com" in invalid(document)


def test_a_published_private_key_makes_the_document_invalid() -> None:
    assert "private" in invalid({"keys": [HOST.private_jwk]})
    assert "private" in invalid({"keys": [HOST.public_jwk], "agents": {"/x": {"keys": [SALES.private_jwk]}}})
    with pytest.raises(ProofRefused, match="private"):
        document_for([EU.private_jwk])


def test_kids_are_required_and_unique_in_the_whole_document() -> None:
    no_kid = {k: v for k, v in HOST.public_jwk.items() if k != "kid"}
    assert "kid" in invalid({"keys": [no_kid]})
    assert "kid" in invalid({"keys": [{**HOST.public_jwk, "kid": ""}]})
    assert "kid" in invalid({"keys": [{**HOST.public_jwk, "kid": "x" * 129}]})
    assert "kid" in invalid({"keys": [{**HOST.public_jwk, "kid": "tab\there"}]})
    twice = {"keys": [HOST.public_jwk], "agents": {"/sales": {"keys": [{**SALES.public_jwk, "kid": "host"}]}}}
    assert "more than one key" in invalid(twice)


def test_keys_of_other_types_are_skipped() -> None:
    rsa = {"kty": "RSA", "n": "AQAB", "e": "AQAB", "kid": "rsa"}
    x25519 = {"kty": "OKP", "crv": "X25519", "x": HOST.public_jwk["x"], "kid": "dh"}
    p384 = {"kty": "EC", "crv": "P-384", "x": "a", "y": "b", "kid": "p384"}
    encryption = {**EU.public_jwk, "use": "enc"}
    document = {"keys": [rsa, x25519, p384, encryption, HOST.public_jwk]}
    assert set(keys_for(document, parse_domain_actor("example.com"))) == {"host"}
    assert "no usable key" in invalid({"keys": [rsa, x25519]})


@pytest.mark.parametrize(
    ("document", "says"),
    [
        ([], "not a JSON object"),
        ({"keys": {}}, "not a list"),
        ({"keys": ["key"]}, "not a JSON object"),
        ({"keys": [HOST.public_jwk], "agents": []}, '"agents"'),
        ({"keys": [HOST.public_jwk], "agents": {"sales": {"keys": []}}}, "agent path"),
        ({"keys": [HOST.public_jwk], "agents": {"/sales/": {"keys": []}}}, "agent path"),
        ({"keys": [HOST.public_jwk], "agents": {"/Sales": {"keys": []}}}, "agent path"),
        ({"keys": [HOST.public_jwk], "agents": {"/sales": []}}, "not an object"),
        ({"keys": [{**HOST.public_jwk, "alg": "ES256"}]}, "algorithm"),
        ({"keys": [{**HOST.public_jwk, "x": HOST.public_jwk["x"][:-1]}]}, "coordinates"),
        ({"keys": [{**HOST.public_jwk, "x": 12}]}, "coordinates"),
        ({"keys": [{**SALES.public_jwk, "y": SALES.public_jwk["x"]}]}, "not a valid P-256"),  # off the curve
    ],
)
def test_a_document_of_the_wrong_shape_is_invalid(document: Any, says: str) -> None:
    assert says in invalid(document)


def test_a_matching_alg_member_is_accepted() -> None:
    document = {"keys": [{**HOST.public_jwk, "alg": "EdDSA", "use": "sig"}]}
    assert set(keys_for(document, parse_domain_actor("example.com"))) == {"host"}


def test_bounds_are_checked_before_any_key_is_read() -> None:
    # keys that would each be refused on their own: the bound is what is reported
    assert "more than 32 keys" in invalid({"keys": [{}] * 33})
    assert "more than 32 keys" in invalid({"keys": [{}] * 20, "agents": {"/a": {"keys": [{}] * 13}}})
    agents: dict[str, Any] = {f"/a{i}": {"keys": [{}]} for i in range(65)}
    assert "more than 64 agent paths" in invalid({"keys": [], "agents": agents})


def test_32_keys_and_64_agent_paths_are_allowed() -> None:
    keys = [generate_keypair().public_jwk for _ in range(32)]
    document = document_for(keys[:1], {f"/a{i}": [keys[1 + i]] if i < 31 else [] for i in range(64)})
    assert len(keys_for(document, parse_domain_actor("example.com/a3"))) == 2


def test_document_for_builds_what_keys_for_reads() -> None:
    assert DOCUMENT == {
        "keys": [HOST.public_jwk],
        "agents": {"/sales": {"keys": [SALES.public_jwk]}, "/sales/eu": {"keys": [EU.public_jwk]}},
    }
    assert document_for([HOST.public_jwk]) == {"keys": [HOST.public_jwk]}
