"""Actor ids: which kind of actor an id names (domain agent, NEAR account, local), read from the id alone.

Specification: NEAR implicit accounts are 64 lowercase hex digits; named accounts follow nearcore's grammar
and end in .near or .testnet; a domain agent id is `host[:port][/path]` in its one canonical, lower-case
spelling; anything else is local.
"""

from __future__ import annotations

import pytest

from aitp.identity import (
    DomainActor,
    ProofRefused,
    is_near_implicit,
    is_near_named,
    kind_of,
    parse_domain_actor,
    well_known_urls,
)

IMPLICIT = "98793cd91a3f870fb126f66285808c7e094afcfc4eda8a970f6648cdf0dbd6de"


@pytest.mark.parametrize(
    ("actor_id", "kind"),
    [
        (IMPLICIT, "near"),
        ("alice.near", "near"),
        ("shop-1_eu.alice.testnet", "near"),
        ("example.com", "domain"),
        ("shop.example.com:8443", "domain"),
        ("example.com/sales/eu", "domain"),
        ("localhost", "domain"),
        ("localhost:8000/agents/a.b_c-d", "domain"),
        ("alice.eth", "domain"),  # a DNS name, not a NEAR account
        ("alice", "local"),
        ("user_1", "local"),
        ("Example.com", "local"),
        (IMPLICIT.upper(), "local"),
        ("", "local"),
    ],
)
def test_kind_of(actor_id: str, kind: str) -> None:
    assert kind_of(actor_id) == kind


def test_implicit_accounts_are_exactly_64_lowercase_hex_digits() -> None:
    assert is_near_implicit(IMPLICIT)
    assert not is_near_implicit(IMPLICIT[:-1])
    assert not is_near_implicit(IMPLICIT + "0")
    assert not is_near_implicit(IMPLICIT[:-1] + "g")


@pytest.mark.parametrize(
    "actor_id", ["near", ".near", "a..near", "-a.near", "a-.near", "Alice.near", "a" * 60 + ".near", "alice.com"]
)
def test_invalid_named_accounts_are_not_near(actor_id: str) -> None:
    assert not is_near_named(actor_id)


def test_named_accounts_may_be_64_characters() -> None:
    assert is_near_named("a" * 59 + ".near")


def test_a_domain_id_is_read_into_host_port_and_path() -> None:
    assert parse_domain_actor("example.com") == DomainActor("example.com", None, "")
    assert parse_domain_actor("shop.example.com:8443") == DomainActor("shop.example.com", 8443, "")
    assert parse_domain_actor("localhost:8000/sales/eu") == DomainActor("localhost", 8000, "/sales/eu")
    assert parse_domain_actor("localhost:8000/sales/eu").id == "localhost:8000/sales/eu"


@pytest.mark.parametrize(
    "actor_id",
    [
        "com",  # one label
        "example.com.",  # trailing dot: a second spelling
        "-shop.example.com",
        "shop-.example.com",
        "sh_op.example.com",
        "a" * 64 + ".com",  # a label of 64
        ".".join(["a" * 63] * 4) + ".com",  # over 253
        "127.0.0.1",
        "example.com:0",
        "example.com:65536",
        "example.com:080",
        "example.com:",
        "example.com:https",
        "example.com/",
        "example.com/sales/",
        "example.com//sales",
        "example.com/./sales",
        "example.com/..",
        "example.com/Sales",
        "example.com/" + "/".join("abcdefghi"),  # 9 segments
        "example.com/" + "a" * 65,
        "user@example.com",
        "example.com?x",
        "alice.near",
        IMPLICIT,
        "x" * 2000,
    ],
)
def test_invalid_domain_ids_are_refused(actor_id: str) -> None:
    with pytest.raises(ProofRefused) as refused:
        parse_domain_actor(actor_id)
    assert refused.value.code == "invalid_actor_id"
    assert kind_of(actor_id) != "domain"


def test_upper_case_is_refused_saying_ids_are_case_sensitive() -> None:
    with pytest.raises(ProofRefused, match="case-sensitive") as refused:
        parse_domain_actor("Example.com")
    assert refused.value.code == "invalid_actor_id"
    assert str(refused.value) == refused.value.message


def test_a_near_id_is_not_a_domain_id() -> None:
    with pytest.raises(ProofRefused, match="NEAR"):
        parse_domain_actor("alice.near")


def test_well_known_urls_are_https_and_http_at_the_host() -> None:
    assert well_known_urls(parse_domain_actor("example.com/sales")) == (
        "https://example.com/.well-known/aitp.json",
        "http://example.com/.well-known/aitp.json",
    )
    assert well_known_urls(parse_domain_actor("localhost:8000")) == (
        "https://localhost:8000/.well-known/aitp.json",
        "http://localhost:8000/.well-known/aitp.json",
    )
