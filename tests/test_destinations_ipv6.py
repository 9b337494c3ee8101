"""The destination policy (webhooks, A2A agents' card URLs) on addresses that hide a private one, through the
HTTP routes that set them (issue 28, item 8).

Specification: an IPv6 address carrying a private, loopback or link-local IPv4 address is refused as that
address would be (IPv4-mapped ::ffff:a.b.c.d, IPv4-compatible ::a.b.c.d, NAT64 64:ff9b::/96, 6to4
2002::/16), and so is the whole local-use NAT64 prefix 64:ff9b:1::/48; one carrying a public IPv4 address is
admitted. A host written with the DNS root's trailing dot is the same host without it: the allow and deny
prefixes match it, an IP address so written is seen as one (no lookup made), and a name is looked up without
the dot; a host of empty labels only is no URL.
"""

from __future__ import annotations

import httpx
import pytest

from aitp.services import destinations
from tests.conftest import API

PRIVATE_IN_IPV6 = [
    "http://[::ffff:127.0.0.1]/",  # IPv4-mapped
    "http://[::ffff:10.1.2.3]:8080/",
    "http://[::127.0.0.1]/",  # IPv4-compatible
    "http://[::a9fe:a9fe]/latest/meta-data",  # ::169.254.169.254
    "http://[64:ff9b::127.0.0.1]/",  # NAT64, well-known prefix
    "http://[64:ff9b::a00:7]/",  # 64:ff9b::10.0.0.7
    "http://[64:ff9b::a9fe:a9fe]/",  # the cloud metadata service through NAT64
    "http://[64:ff9b:1::7f00:1]/",  # local-use NAT64 (RFC 8215)
    "http://[64:ff9b:1:abcd::8.8.8.8]/",
    "http://[2002:7f00:1::]/",  # 6to4 of 127.0.0.1
    "http://[2002:c0a8:101::1]/",  # 6to4 of 192.168.1.1
    "http://[2002:a9fe:a9fe::1]/",  # 6to4 of 169.254.169.254
    "http://[2002:6440:1::1]/",  # 6to4 of 100.64.0.1 (shared, CGNAT)
]
PUBLIC_IN_IPV6 = ["http://[64:ff9b::808:808]/", "http://[2002:808:808::1]/", "http://[::ffff:93.184.215.14]/"]


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The host names the checks look up; example.com names resolve to a public address, others to none."""
    asked: list[str] = []

    async def resolve(host: str, port: int) -> list[str]:
        asked.append(host)
        if host == "localhost":
            return ["127.0.0.1"]
        return ["93.184.215.14"] if host.endswith("example.com") else []

    monkeypatch.setattr(destinations, "resolve", resolve)
    return asked


async def _webhook(api: API, url: str) -> httpx.Response:
    alice = await api.actor("alice")
    return await alice.post("/webhooks", json={"url": url})


async def _card_url(api: API, url: str) -> httpx.Response:
    return await api.admin.put("http://aitp.test/a2a/agent-x/settings", json={"agent_card_url": url})


def _refusal(response: httpx.Response) -> tuple[int, str, str]:
    error = response.json()["error"]
    return response.status_code, error["code"], error["param"]


@pytest.mark.parametrize("url", PRIVATE_IN_IPV6)
async def test_ipv6_addresses_carrying_a_private_ipv4_address_are_refused(api: API, url: str) -> None:
    assert _refusal(await _webhook(api, url)) == (403, "url_not_allowed", "url")
    assert _refusal(await _card_url(api, url)) == (403, "url_not_allowed", "agent_card_url")


@pytest.mark.parametrize("url", PUBLIC_IN_IPV6)
async def test_ipv6_addresses_carrying_a_public_ipv4_address_are_admitted(api: API, url: str) -> None:
    assert (await _webhook(api, url)).status_code == 200
    assert (await _card_url(api, url)).status_code == 200


async def test_a_private_ipv6_address_is_admitted_by_an_allow_prefix(api: API) -> None:
    api.settings_override(webhook_allow=("http://[64:ff9b::7f00:1]:9/ok/",))
    assert (await _webhook(api, "http://[64:ff9b::7f00:1]:9/ok/hook")).status_code == 200
    assert (await _card_url(api, "http://[64:ff9b::7f00:1]:9/ok/card.json")).status_code == 200
    assert _refusal(await _webhook(api, "http://[64:ff9b::7f00:1]:9/other")) == (403, "url_not_allowed", "url")


async def test_an_ip_address_with_a_trailing_dot_is_refused_without_a_lookup(api: API, lookups: list[str]) -> None:
    for url in ("http://127.0.0.1./hook", "http://169.254.169.254./latest", "http://10.0.0.7.:8080/"):
        assert _refusal(await _webhook(api, url)) == (403, "url_not_allowed", "url"), url
        assert _refusal(await _card_url(api, url)) == (403, "url_not_allowed", "agent_card_url"), url
    assert lookups == []


async def test_a_name_with_a_trailing_dot_is_looked_up_and_matched_without_it(api: API, lookups: list[str]) -> None:
    assert _refusal(await _webhook(api, "http://localhost./hook")) == (403, "url_not_allowed", "url")
    assert _refusal(await _card_url(api, "http://LOCALHOST.:8080/")) == (403, "url_not_allowed", "agent_card_url")
    assert lookups == ["localhost", "localhost"]
    # the deny prefix names the host without the dot: the dotted spelling does not get past it
    api.settings_override(webhook_deny=("https://hooks.example.com/",))
    for url in ("https://hooks.example.com./x", "https://HOOKS.example.com.:443/x"):
        assert _refusal(await _webhook(api, url)) == (403, "url_not_allowed", "url"), url
        assert _refusal(await _card_url(api, url)) == (403, "url_not_allowed", "agent_card_url"), url
    assert "hooks.example.com" not in lookups  # a denied host is refused before any lookup
    assert (await _webhook(api, "https://other.example.com./x")).status_code == 200
    # and an allow prefix admits it
    api.settings_override(webhook_allow=("http://localhost:9/ok/",))
    assert (await _webhook(api, "http://localhost.:9/ok/hook")).status_code == 200


@pytest.mark.parametrize("url", ["http://./", "http://example.com../", "http://../x"])
async def test_a_host_of_empty_labels_is_no_url(api: API, lookups: list[str], url: str) -> None:
    assert _refusal(await _webhook(api, url)) == (422, "invalid_url", "url")
    assert lookups == []
