"""The key document a domain publishes at `/.well-known/aitp.json`: which keys may sign for its agents.

    {
      "keys": [<public JWK>, ...],
      "agents": {
        "/sales": {"keys": [<public JWK>, ...]}
      }
    }

- `keys`: keys valid for the host's own agent (`example.com`) and for every agent path under it
  (`example.com/sales`, `example.com/sales/eu`).
- `agents` (optional): keys valid for one agent path only, matched exactly: the keys of "/sales" sign for
  `example.com/sales`, not for `example.com/sales/eu`.

Each key is a public JWK with a `kid`: `{"kty": "OKP", "crv": "Ed25519", "x": ..., "kid": ...}` (signs with
EdDSA) or `{"kty": "EC", "crv": "P-256", "x": ..., "y": ..., "kid": ...}` (signs with ES256). A `kid` is 1 to
128 printable ASCII characters, unique within the document; an `alg`, when given, must be the key's. A key
with a private member (`d`) makes the whole document invalid: the private key is public now, replace it. Keys
of other types or curves (and keys whose `use` is not "sig") are skipped, so a document may carry keys for
other purposes, but an actor needs at least one usable key. At most 32 keys in all and 64 agent paths.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jwt

from aitp.identity.actor_ids import MAX_SEGMENTS, DomainActor
from aitp.identity.refusals import ProofRefused

MAX_KEYS = 32
MAX_AGENTS = 64
ALGORITHMS = {("OKP", "Ed25519"): "EdDSA", ("EC", "P-256"): "ES256"}
_COORDINATE = re.compile(r"[A-Za-z0-9_-]{43}")  # 32 bytes, base64url without padding (RFC 7518 §6.2.1.2)
_KID = re.compile(r"[\x20-\x7e]{1,128}")
_AGENT_PATH = re.compile(rf"(/[a-z0-9][a-z0-9._-]{{0,63}}){{1,{MAX_SEGMENTS}}}")
_PRIVATE_MEMBERS = ("d", "p", "q", "dp", "dq", "qi", "oth", "k")  # "k": a symmetric key is all secret


def algorithm_of(jwk: dict[str, Any]) -> str | None:
    """The JWS algorithm a JWK of a supported type and curve signs with (None: not one this service uses)."""
    kty, crv = jwk.get("kty"), jwk.get("crv")
    return ALGORITHMS.get((kty, crv)) if isinstance(kty, str) and isinstance(crv, str) else None


@dataclass(frozen=True)
class PublishedKeys:
    """A key document, read: the host's keys and each agent path's, by kid."""

    host: dict[str, jwt.PyJWK] = field(default_factory=dict)
    agents: dict[str, dict[str, jwt.PyJWK]] = field(default_factory=dict)

    def for_actor(self, actor: DomainActor) -> dict[str, jwt.PyJWK]:
        """The keys that may sign for `actor`; `well_known_invalid` when there is none."""
        keys = {**self.host, **self.agents.get(actor.path, {})}
        if not keys:
            raise ProofRefused(
                "well_known_invalid", f"The key document of {actor.host} publishes no usable key for {actor.id}."
            )
        return keys


def _invalid(message: str) -> ProofRefused:
    return ProofRefused("well_known_invalid", f"Invalid key document: {message}")


def _key_list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise _invalid(f"{where} is not a list of keys.")
    return value


def _read_key(jwk: Any, where: str, kids: set[str]) -> jwt.PyJWK | None:
    """One published key, or None when it is of a kind this service does not use."""
    if not isinstance(jwk, dict):
        raise _invalid(f"a key in {where} is not a JSON object.")
    if any(member in jwk for member in _PRIVATE_MEMBERS):
        raise _invalid(f"a key in {where} includes its private part; it is compromised and must be replaced.")
    kid = jwk.get("kid")
    if not isinstance(kid, str) or not _KID.fullmatch(kid):
        raise _invalid(f"a key in {where} has no kid of 1 to 128 printable ASCII characters.")
    if kid in kids:
        raise _invalid(f"the kid {kid!r} is used by more than one key.")
    kids.add(kid)
    algorithm = algorithm_of(jwk)
    if algorithm is None or jwk.get("use", "sig") != "sig":
        return None
    if jwk.get("alg", algorithm) != algorithm:
        raise _invalid(f"the key {kid!r} is a {jwk['crv']} key but names the algorithm {jwk.get('alg')!r}.")
    coordinates = ("x", "y") if jwk["kty"] == "EC" else ("x",)
    if not all(isinstance(jwk.get(c), str) and _COORDINATE.fullmatch(jwk[c]) for c in coordinates):
        raise _invalid(f"the key {kid!r} does not have the coordinates of a {jwk['crv']} public key.")
    try:
        return jwt.PyJWK(jwk, algorithm=algorithm)
    except (jwt.PyJWKError, jwt.InvalidKeyError, ValueError, TypeError) as error:
        raise _invalid(f"the key {kid!r} is not a valid {jwk['crv']} public key.") from error


def _read_keys(jwks: list[Any], where: str, kids: set[str]) -> dict[str, jwt.PyJWK]:
    keys = {}
    for jwk in jwks:
        key = _read_key(jwk, where, kids)
        if key is not None:
            keys[jwk["kid"]] = key
    return keys


def read_document(document: Any) -> PublishedKeys:
    """Every key of a key document (parsed JSON), checked; `well_known_invalid` for a bad shape."""
    if not isinstance(document, dict):
        raise _invalid("it is not a JSON object.")
    host_keys = _key_list(document.get("keys", []), '"keys"')
    agents = document.get("agents", {})
    if not isinstance(agents, dict):
        raise _invalid('"agents" is not an object of agent paths.')
    # bounds before any key is parsed: a document cannot make this service do much work
    if len(agents) > MAX_AGENTS:
        raise _invalid(f"more than {MAX_AGENTS} agent paths.")
    agent_keys: dict[str, list[Any]] = {}
    for path, entry in agents.items():
        if not _AGENT_PATH.fullmatch(path):
            raise _invalid(f'the agent path {path[:80]!r} is not a path of a domain agent id (like "/sales").')
        if not isinstance(entry, dict):
            raise _invalid(f'the agent path {path!r} is not an object with "keys".')
        agent_keys[path] = _key_list(entry.get("keys", []), f'the "keys" of {path!r}')
    if len(host_keys) + sum(len(keys) for keys in agent_keys.values()) > MAX_KEYS:
        raise _invalid(f"more than {MAX_KEYS} keys.")
    kids: set[str] = set()
    return PublishedKeys(
        host=_read_keys(host_keys, '"keys"', kids),
        agents={path: _read_keys(keys, f'the "keys" of {path!r}', kids) for path, keys in agent_keys.items()},
    )


def keys_for(document: Any, actor: DomainActor) -> dict[str, jwt.PyJWK]:
    """The keys (by kid) that a key document publishes for `actor`: the host's, and its exact agent path's."""
    return read_document(document).for_actor(actor)


def document_for(
    public_jwks: list[dict[str, Any]], agents: Mapping[str, list[dict[str, Any]]] | None = None
) -> dict[str, Any]:
    """A key document publishing `public_jwks` for the host and its agents, and `agents`' keys for one path each.
    Checked as a reader would check it (`well_known_invalid` otherwise): a private key is never published."""
    document: dict[str, Any] = {"keys": [dict(jwk) for jwk in public_jwks]}
    if agents:
        document["agents"] = {path: {"keys": [dict(jwk) for jwk in jwks]} for path, jwks in agents.items()}
    read_document(document)
    return document
