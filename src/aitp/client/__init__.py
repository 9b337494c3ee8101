"""Async Python client of the aitp thread service, for agent developers (over httpx).

    from aitp.client import AitpClient, NotFound

    DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
    async with AitpClient("http://127.0.0.1:8000", api_key) as client:
        thread = await client.create_thread(actors=[{"id": "shop.near", "capabilities": [DECISIONS]}])
        await client.create_message(thread.id, "I would like to buy some socks")
        await client.create_message(thread.id, {"$schema": DECISIONS, "decision": {...}})  # sent as JSON text
        async for message in client.iter_messages(thread.id, order="asc"):
            print(message.metadata["actor"], message.content[0])
        try:
            await client.get_thread("thread_missing")
        except NotFound as error:
            print(error.code, error.param)  # thread_not_found thread_id

Results are the service's own pydantic wire models (`aitp.models`). Every refusal raises an
`AitpError` subclass chosen by HTTP status, carrying the OpenAI error envelope's `message`, `type`,
`param` and `code`; network failures and timeouts raise httpx's exceptions (`httpx.TransportError`)
unchanged.
"""

from aitp.client._client import AitpClient, Order
from aitp.client._content import ActorSpec, MessageContent, PartInput, capability_text
from aitp.client._errors import (
    AitpError,
    BadRequest,
    Conflict,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    RateLimited,
    ServerError,
    Unauthenticated,
    Unprocessable,
)
from aitp.client._stream import LiveStream, Reconnect
from aitp.models import (
    Actor,
    ActorInput,
    ApiKey,
    Capability,
    CreatedApiKey,
    DeletedObject,
    Event,
    EventList,
    InboxEvent,
    InboxEventList,
    ListPage,
    Message,
    NegotiatedCapability,
    RangeDeclaration,
    SchemaDeclaration,
    Thread,
    ThreadCapabilities,
)
from aitp.models.messages import AitpPart, ImageFilePart, ImageUrlPart, TextPart

__all__ = [
    "AitpClient",
    "Order",
    # live events
    "LiveStream",
    "Reconnect",
    # what methods take
    "ActorSpec",
    "MessageContent",
    "PartInput",
    "capability_text",
    # errors
    "AitpError",
    "BadRequest",
    "Conflict",
    "NotFound",
    "PayloadTooLarge",
    "PermissionDenied",
    "RateLimited",
    "ServerError",
    "Unauthenticated",
    "Unprocessable",
    # results
    "Actor",
    "ActorInput",
    "AitpPart",
    "ApiKey",
    "Capability",
    "CreatedApiKey",
    "DeletedObject",
    "Event",
    "EventList",
    "InboxEvent",
    "InboxEventList",
    "ImageFilePart",
    "ImageUrlPart",
    "ListPage",
    "Message",
    "NegotiatedCapability",
    "RangeDeclaration",
    "SchemaDeclaration",
    "TextPart",
    "Thread",
    "ThreadCapabilities",
]
