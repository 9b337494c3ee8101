"""Async Python client of the aitp thread service, for agent developers (over httpx).

    from aitp.client import DECISIONS, AitpClient, Decision, NotFound, SelectedOption

    async with AitpClient("http://127.0.0.1:8000", api_key) as client:
        thread = await client.create_thread(actors=[{"id": "shop.near", "capabilities": [DECISIONS]}])
        await client.create_message(thread.id, "I would like to buy some socks")
        choice = Decision(request_decision_id="socks-1", options=[SelectedOption(id="red")])  # typed, checked
        await client.create_message(thread.id, choice.to_message())  # {"$schema": DECISIONS, "decision": ...}
        async for message in client.iter_messages(thread.id, order="asc"):
            print(message.metadata["actor"], message.content[0])
        try:
            await client.get_thread("thread_missing")
        except NotFound as error:
            print(error.code, error.param)  # thread_not_found thread_id

Live events come over a WebSocket that resumes from the last event seen after a drop or a slow-consumer
close, so every event arrives once, in order; `stream` also posts on the same socket:

    async for event in client.events(thread.id, after=0):  # ends when the thread is deleted
        print(event.seq, event.type)
    async for event in client.inbox():  # from its end now (after=0: all of it); new threads included
        ...
    async with client.stream(thread.id) as stream:
        message = await stream.post("hi")  # refusals raise the same errors as create_message

An agent is mostly handlers: `Agent` follows the inbox, declares its capabilities in threads it joins,
calls a handler per capability message type (with the validated payload) and replies idempotently:

    agent = Agent(client, capabilities=[DECISIONS], cursor_file="agent.cursor")

    @agent.on("decision")
    async def on_decision(incoming: Incoming) -> None:
        print(incoming.sender, incoming.payload["options"])
        await incoming.reply("Noted.")

    @agent.on_arrival  # a thread another actor opened with the agent in it (or added it to)
    async def greet(arrival: Arrival) -> None:
        await arrival.reply(f"Hello {arrival.creator}!")

    @agent.on_error  # what a handler raised, logged already; the event is tried again, then skipped
    async def alert(error: Exception, event: InboxEvent) -> None:
        ...

    await agent.run()  # resumes after the saved cursor, else starts at the inbox's end; never dies of a handler

`capability_payloads(message)` reads any message's capability messages (type, version, payload) as the
server validated them; `client.me()` says who the key acts as. See docs/agents.md.

Where no socket stays open, a webhook pushes the same inbox events, signed; a receiver checks each with
`verify_webhook(secret, body, headers)` (`WebhookVerificationError` if it was not signed by the service).

Results are the service's own pydantic wire models (`aitp.bindings.openai_threads.models`). Every refusal raises an
`AitpError` subclass chosen by HTTP status, carrying the OpenAI error envelope's `message`, `type`,
`param` and `code`; network failures and timeouts raise httpx's exceptions (`httpx.TransportError`)
unchanged, and a live stream that cannot reconnect (`Reconnect.max_attempts`) raises its last connection
error (`OSError`, or a `websockets` exception) unchanged.
"""

from aitp.bindings.openai_threads.models import (
    Actor,
    ActorInput,
    ApiKey,
    Capability,
    CapabilityExample,
    CapabilityExampleList,
    CreatedApiKey,
    DeletedObject,
    Event,
    EventList,
    Identity,
    InboxEvent,
    InboxEventList,
    ListPage,
    Message,
    MessageRefusal,
    NegotiatedCapability,
    RangeDeclaration,
    SchemaDeclaration,
    Thread,
    ThreadCapabilities,
)
from aitp.bindings.openai_threads.models.customer_sessions import CustomerSession
from aitp.bindings.openai_threads.models.messages import AitpPart, ImageFilePart, ImageUrlPart, TextPart
from aitp.client._agent import Agent
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
from aitp.client._incoming import Arrival, Incoming
from aitp.client._payloads import CapabilityPayload, capability_payloads, plain_text
from aitp.client._sign_in import PrivateKey, sign_in_proof
from aitp.client._stream import LiveStream, Reconnect
from aitp.client._webhooks import WebhookVerificationError, verify_webhook
from aitp.client.capabilities import (
    DATA_REQUESTS,
    DECISIONS,
    EVM_WALLET,
    LEGACY_PAYMENTS,
    NEAR_WALLET,
    PAYMENTS,
    Affiliate,
    CapabilityMessage,
    Data,
    Decision,
    DecisionOption,
    FieldValue,
    Form,
    FormField,
    OptionQuote,
    OptionVariant,
    Payment,
    PaymentConfirmation,
    PaymentDetail,
    PaymentMethod,
    PaymentMethodUsed,
    PaymentOption,
    PaymentPlan,
    Quote,
    QuoteWrapper,
    RequestData,
    RequestDecision,
    RevenueShare,
    SelectedOption,
    TopUpRequest,
    TopUpResponse,
    WrappedQuote,
    parse_payload,
)

__all__ = [
    "AitpClient",
    "Order",
    # signing in with the actor's own key
    "PrivateKey",
    "sign_in_proof",
    # live events
    "LiveStream",
    "Reconnect",
    # agents
    "Agent",
    "Arrival",
    "Incoming",
    "CapabilityPayload",
    "capability_payloads",
    "plain_text",
    # capability messages: URLs, typed payloads (aitp.client.capabilities)
    "DATA_REQUESTS",
    "DECISIONS",
    "EVM_WALLET",
    "LEGACY_PAYMENTS",
    "NEAR_WALLET",
    "PAYMENTS",
    "Affiliate",
    "CapabilityMessage",
    "Data",
    "Decision",
    "DecisionOption",
    "FieldValue",
    "Form",
    "FormField",
    "OptionQuote",
    "OptionVariant",
    "Payment",
    "PaymentConfirmation",
    "PaymentDetail",
    "PaymentMethod",
    "PaymentMethodUsed",
    "PaymentOption",
    "PaymentPlan",
    "Quote",
    "QuoteWrapper",
    "RequestData",
    "RequestDecision",
    "RevenueShare",
    "SelectedOption",
    "TopUpRequest",
    "TopUpResponse",
    "WrappedQuote",
    "parse_payload",
    # webhooks
    "verify_webhook",
    "WebhookVerificationError",
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
    "CapabilityExample",
    "CapabilityExampleList",
    "CreatedApiKey",
    "CustomerSession",
    "DeletedObject",
    "Event",
    "EventList",
    "Identity",
    "InboxEvent",
    "InboxEventList",
    "ImageFilePart",
    "ImageUrlPart",
    "ListPage",
    "Message",
    "MessageRefusal",
    "NegotiatedCapability",
    "RangeDeclaration",
    "SchemaDeclaration",
    "TextPart",
    "Thread",
    "ThreadCapabilities",
]
