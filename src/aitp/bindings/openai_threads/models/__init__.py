"""Pydantic v2 wire models: what crosses the HTTP boundary, in both directions.

Responses are rendered as plain dicts by `aitp.bindings.openai_threads.render` (no per-request model validation on the
hot path); these models document them in the OpenAPI document and `schemas/`, and a test checks
that real responses validate against them.
"""

from aitp.bindings.openai_threads.models.capabilities import (
    Capability,
    CapabilityExample,
    CapabilityExampleList,
    CapabilityList,
    NegotiatedCapability,
    RegisterCapabilityRequest,
    ThreadCapabilities,
)
from aitp.bindings.openai_threads.models.common import DeletedObject, ErrorBody, ErrorResponse, ListPage
from aitp.bindings.openai_threads.models.events import (
    Event,
    EventList,
    InboxEvent,
    InboxEventList,
    MessageRefusal,
    TurnsChange,
)
from aitp.bindings.openai_threads.models.keys import ApiKey, ApiKeyList, CreatedApiKey, CreateKeyRequest, Identity
from aitp.bindings.openai_threads.models.messages import CreateMessageRequest, Message, ModifyMessageRequest
from aitp.bindings.openai_threads.models.threads import (
    Actor,
    ActorInput,
    ActorList,
    CapabilityDeclaration,
    CreateThreadRequest,
    ModifyThreadRequest,
    RangeDeclaration,
    SchemaDeclaration,
    Thread,
    ThreadTurns,
)

__all__ = [
    "Capability",
    "CapabilityExample",
    "CapabilityExampleList",
    "CapabilityList",
    "NegotiatedCapability",
    "RegisterCapabilityRequest",
    "ThreadCapabilities",
    "Actor",
    "ActorInput",
    "ActorList",
    "ApiKey",
    "ApiKeyList",
    "CapabilityDeclaration",
    "CreateKeyRequest",
    "CreateMessageRequest",
    "CreateThreadRequest",
    "CreatedApiKey",
    "DeletedObject",
    "ErrorBody",
    "ErrorResponse",
    "Event",
    "EventList",
    "Identity",
    "InboxEvent",
    "InboxEventList",
    "ListPage",
    "Message",
    "MessageRefusal",
    "TurnsChange",
    "ModifyMessageRequest",
    "ModifyThreadRequest",
    "RangeDeclaration",
    "SchemaDeclaration",
    "Thread",
    "ThreadTurns",
]
