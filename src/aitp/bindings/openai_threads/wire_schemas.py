"""JSON Schema documents of every wire object, exported from the pydantic models into `schemas/`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from aitp.bindings.openai_threads import models
from aitp.bindings.openai_threads.models import codes, customer_sessions, identities, presence, profiles, search

BASE_URL = "https://aitp.dev/service/schemas/"

# file stem → (model, mode): responses in serialization mode, requests in validation mode
WIRE_OBJECTS: dict[str, tuple[Any, str]] = {
    "thread": (models.Thread, "serialization"),
    "message": (models.Message, "serialization"),
    "actor": (models.Actor, "serialization"),
    "capability-declaration": (models.CapabilityDeclaration, "serialization"),
    "event": (models.Event, "serialization"),
    "event-list": (models.EventList, "serialization"),
    "inbox-event": (models.InboxEvent, "serialization"),
    "inbox-event-list": (models.InboxEventList, "serialization"),
    "message-refusal": (models.MessageRefusal, "serialization"),
    "turns-change": (models.TurnsChange, "serialization"),
    "thread-list": (models.ListPage[models.Thread], "serialization"),
    "message-list": (models.ListPage[models.Message], "serialization"),
    "actor-list": (models.ActorList, "serialization"),
    "deleted-object": (models.DeletedObject, "serialization"),
    "capability": (models.Capability, "serialization"),
    "capability-list": (models.CapabilityList, "serialization"),
    "capability-example-list": (models.CapabilityExampleList, "serialization"),
    "thread-capabilities": (models.ThreadCapabilities, "serialization"),
    "error": (models.ErrorResponse, "serialization"),
    "api-key": (models.ApiKey, "serialization"),
    "created-api-key": (models.CreatedApiKey, "serialization"),
    "identity": (models.Identity, "serialization"),
    "profile": (profiles.Profile, "serialization"),
    "profile-list": (profiles.ProfileList, "serialization"),
    "websocket-ticket": (codes.Ticket, "serialization"),
    "sign-in-code": (codes.SignInCode, "serialization"),
    "signed-in": (codes.SignedIn, "serialization"),
    "actor-identity": (identities.ActorIdentity, "serialization"),
    "contact-policy": (identities.ContactPolicy, "serialization"),
    "auth-challenge": (identities.Challenge, "serialization"),
    "auth-token": (identities.Token, "serialization"),
    "customer-session": (customer_sessions.CustomerSession, "serialization"),
    "customer-session-settings": (customer_sessions.CustomerSessionSettings, "serialization"),
    "actor-presence": (presence.ActorPresence, "serialization"),
    "activity": (presence.Activity, "serialization"),
    "thread-search-results": (search.ThreadSearchResults, "serialization"),
    "create-thread-request": (models.CreateThreadRequest, "validation"),
    "modify-thread-request": (models.ModifyThreadRequest, "validation"),
    "create-message-request": (models.CreateMessageRequest, "validation"),
    "modify-message-request": (models.ModifyMessageRequest, "validation"),
    "actor-input": (models.ActorInput, "validation"),
    "create-key-request": (models.CreateKeyRequest, "validation"),
    "register-capability-request": (models.RegisterCapabilityRequest, "validation"),
    "profile-input": (profiles.ProfileInput, "validation"),
    "create-sign-in-code-request": (codes.CreateSignInCodeRequest, "validation"),
    "sign-in-request": (codes.SignInRequest, "validation"),
    "contact-policy-input": (identities.ContactPolicyInput, "validation"),
    "auth-challenge-request": (identities.ChallengeRequest, "validation"),
    "auth-token-request": (identities.TokenRequest, "validation"),
    "create-customer-session-request": (customer_sessions.CreateCustomerSessionRequest, "validation"),
    "create-anonymous-session-request": (customer_sessions.CreateAnonymousSessionRequest, "validation"),
    "customer-session-settings-input": (customer_sessions.CustomerSessionSettingsInput, "validation"),
    "activity-input": (presence.ActivityInput, "validation"),
}


def build() -> dict[str, dict[str, Any]]:
    """file name → JSON Schema document (2020-12)."""
    documents = {}
    for stem, (model, mode) in WIRE_OBJECTS.items():
        schema = TypeAdapter(model).json_schema(mode=mode)  # type: ignore[arg-type]
        documents[f"{stem}.schema.json"] = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": BASE_URL + f"{stem}.schema.json",
            **schema,
        }
    return documents


def render(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def export(directory: Path) -> list[Path]:
    """Write every schema into `directory`, removing stale `*.schema.json` files; returns the paths."""
    directory.mkdir(parents=True, exist_ok=True)
    documents = build()
    for stale in directory.glob("*.schema.json"):
        if stale.name not in documents:
            stale.unlink()
    paths = []
    for name, document in documents.items():
        path = directory / name
        path.write_text(render(document))
        paths.append(path)
    return paths


def drift(directory: Path) -> list[str]:
    """Names of files in `directory` that differ from (or are missing for) the current models."""
    documents = build()
    changed = [
        n for n, d in documents.items() if not (directory / n).is_file() or (directory / n).read_text() != render(d)
    ]
    extra = [p.name for p in directory.glob("*.schema.json") if p.name not in documents]
    return sorted(changed + extra)
