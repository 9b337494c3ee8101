"""Verifiable agent identity: an actor proves who it is with a signature, not with a key an admin handed out.

- A domain agent (`example.com`, `example.com/sales`) signs a JWS with a key its domain publishes at
  `/.well-known/aitp.json` (`documents`, `domain`).
- A NEAR account (`alice.near`, or a 64-hex implicit account) signs a NEP-413 message with one of its
  full-access keys (`near`, `near_rpc`).
- Any other id is a local actor, with no proof of its own (`actor_ids`).

Every refusal is a `ProofRefused` with a stable code. This package is a leaf of `aitp`: it imports nothing else
from it, so the Python client uses it as it is.
"""

from __future__ import annotations

from aitp.identity.actor_ids import (
    DomainActor,
    is_domain,
    is_near,
    is_near_implicit,
    is_near_named,
    kind_of,
    parse_domain_actor,
    well_known_urls,
)
from aitp.identity.documents import PublishedKeys, document_for, keys_for, read_document
from aitp.identity.domain import proof_key_id, sign_domain_proof, verify_domain_proof
from aitp.identity.keypairs import KeyPair, generate_keypair, load_private_key, near_keypair, thumbprint
from aitp.identity.near import (
    implicit_account_of,
    nep413_message,
    parse_public_key,
    sign_nep413,
    verify_nep413,
)
from aitp.identity.near_rpc import full_access_key
from aitp.identity.refusals import ProofRefused, RefusalCode

__all__ = [
    "DomainActor",
    "KeyPair",
    "ProofRefused",
    "PublishedKeys",
    "RefusalCode",
    "document_for",
    "full_access_key",
    "generate_keypair",
    "implicit_account_of",
    "is_domain",
    "is_near",
    "is_near_implicit",
    "is_near_named",
    "keys_for",
    "kind_of",
    "load_private_key",
    "near_keypair",
    "nep413_message",
    "parse_domain_actor",
    "parse_public_key",
    "proof_key_id",
    "read_document",
    "sign_domain_proof",
    "sign_nep413",
    "thumbprint",
    "verify_domain_proof",
    "verify_nep413",
    "well_known_urls",
]
