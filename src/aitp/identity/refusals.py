"""Why a proof of identity was refused: one exception with a stable code, shared by every kind of proof.

Messages say which step failed (so an agent's developer can fix it) and never carry a secret.
"""

from __future__ import annotations

from typing import Literal

RefusalCode = Literal[
    "invalid_actor_id",  # the id is neither a domain agent id nor a NEAR account id
    "proof_malformed",  # not the shape expected: not a compact JWS, bad base64, unknown alg, no kid...
    "key_not_published",  # the key is not among the actor's published keys / not a full-access key
    "bad_signature",  # the signature does not verify (or the key cannot make that kind of signature)
    "claims_mismatch",  # signed, but not for what was asked (iss, sub, aud, nonce, iat)
    "well_known_unreachable",  # /.well-known/aitp.json could not be fetched (network, status, policy)
    "well_known_too_large",
    "well_known_invalid",  # not JSON, not the document's shape, or no usable key for the actor
    "near_rpc_unreachable",  # the NEAR RPC did not answer, or answered something else than yes or no
]


class ProofRefused(Exception):
    """A proof that does not prove: `code` for programs, `message` (also `str(exc)`) for people."""

    def __init__(self, code: RefusalCode, message: str) -> None:
        super().__init__(message)
        self.code: str = code
        self.message: str = message

    def __repr__(self) -> str:
        return f"ProofRefused({self.code!r}, {self.message!r})"
