"""Who an actor is (AITP extension): its verification, its contact policy, and sign-in without an admin."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from aitp.bindings.openai_threads.models.profiles import Kind, Profile, Verification

Policy = Literal["anyone", "verified", "allow_list", "nobody"]


class ContactPolicyInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    policy: Policy = Field(description="Who may bring this actor into a thread.")
    allow: list[str] | None = Field(None, max_length=1000, description="Actor ids, for the allow_list policy.")


class ContactPolicy(BaseModel):
    object: Literal["actor.contact_policy"] = "actor.contact_policy"
    actor: str
    policy: Policy
    allow: list[str]


class ActorIdentity(BaseModel):
    """An actor as this server knows it. `profile` is shown for verified actors (and to the actor itself and
    admins); `contact_policy` to the actor itself and admins only."""

    object: Literal["actor.identity"] = "actor.identity"
    id: str
    kind: Kind
    verified: bool
    verification: Verification
    profile: Profile | None = None
    contact_policy: ContactPolicy | None = None


class ChallengeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    actor: str = Field(min_length=1, max_length=300, description="A host name (domain agent) or a NEAR account.")


class Challenge(BaseModel):
    """A single-use nonce to sign. A domain agent signs a JWT (`iss`/`sub` the actor, `aud` the audience,
    `nonce`); a NEAR account signs the NEP-413 message {message, nonce, recipient}."""

    object: Literal["auth.challenge"] = "auth.challenge"
    actor: str
    kind: Literal["domain", "near"]
    nonce: str = Field(description="32 bytes, base64url without padding (NEP-413's nonce as it is).")
    expires_at: int
    audience: str
    message: str
    recipient: str


class TokenRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    actor: str = Field(min_length=1, max_length=300)
    nonce: str = Field(min_length=1, max_length=100)
    proof: str | dict[str, Any] = Field(
        description="A domain agent's compact JWS, or a NEAR account's {public_key, signature}."
    )


class Token(BaseModel):
    """An API key for the actor that proved itself (shown once), and what proved it."""

    object: Literal["auth.token"] = "auth.token"
    id: str
    actor: str
    key: str
    expires_at: int
    scopes: list[str]
    verification: Verification
