"""Webhooks (AITP extension): URLs an actor's inbox events are pushed to, signed (Standard Webhooks), and the
deliveries made to them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from aitp.bindings.openai_threads.models.events import EventType

URL = "An http(s) URL on a public address."
EVENT_TYPES = "The event types to send; empty: every event of the inbox."
MESSAGES = (
    "Which `thread.message.created` events to send: `all` (the actor's own too), or `addressed`: those that ask"
    " the actor for work (they name it in `metadata.to`, or name no one and a person wrote them), so that two"
    " agents answering what they get do not answer each other forever. Other event types are unaffected."
)
Messages = Literal["all", "addressed"]
ON_CLIENT_ERROR = (
    "What a 4xx answer (but 408, 410 and 429) does to a delivery: `skip` (default): after 3 such answers the"
    " delivery is `failed` and its thread's next event goes; `block`: it is retried like any failure (for"
    " up to a day), holding its thread's later events back."
)
ClientErrorPolicy = Literal["skip", "block"]
ORDERING = (
    "`thread` (default): a thread's events are sent one at a time, in order, each once the previous one is"
    " delivered (or given up); `none`: up to 8 at a time whatever their thread, so a receiver slow to answer"
    " does not hold a busy thread back; they may then arrive out of order (each carries its `cursor`)."
)
Ordering = Literal["thread", "none"]
DeliveryStatus = Literal["pending", "succeeded", "failed", "canceled"]
# The default of a field changed only when given: never used, so None, though the field's type refuses null (a
# field given as null is refused); typed Any, as the type checker takes a default for a value of the field
NOT_GIVEN: Any = None


class CreateWebhookRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str = Field(min_length=1, max_length=2048, description=URL)
    event_types: list[EventType] = Field(default_factory=list, description=EVENT_TYPES)
    messages: Messages = Field("all", description=MESSAGES)
    on_client_error: ClientErrorPolicy = Field("skip", description=ON_CLIENT_ERROR)
    ordering: Ordering = Field("thread", description=ORDERING)
    description: str | None = Field(None, max_length=512)
    enabled: bool = Field(True, strict=True)
    actor: str | None = Field(
        None, min_length=1, max_length=256, description="Whose inbox: the caller's (an admin key names one)."
    )


class ModifyWebhookRequest(BaseModel):
    """The fields to change; those left out stay. Enabling an endpoint the service disabled clears why."""

    model_config = ConfigDict(extra="forbid")
    # a field left out is not given (`model_fields_set`); its default is never used
    url: str = Field(NOT_GIVEN, min_length=1, max_length=2048, description=URL)
    event_types: list[EventType] = Field(NOT_GIVEN, description=EVENT_TYPES)
    messages: Messages = Field(NOT_GIVEN, description=MESSAGES)
    on_client_error: ClientErrorPolicy = Field(NOT_GIVEN, description=ON_CLIENT_ERROR)
    ordering: Ordering = Field(NOT_GIVEN, description=ORDERING)
    description: str | None = Field(None, max_length=512)
    enabled: bool = Field(NOT_GIVEN, strict=True)


class Webhook(BaseModel):
    id: str
    object: Literal["webhook"] = "webhook"
    actor: str
    url: str
    event_types: list[str] = Field(description=EVENT_TYPES)
    messages: Messages = Field(description=MESSAGES)
    on_client_error: ClientErrorPolicy = Field(description=ON_CLIENT_ERROR)
    ordering: Ordering = Field(description=ORDERING)
    description: str | None
    enabled: bool
    created_at: int
    failing_since: int | None = Field(description="When the current run of failed attempts began; null if none.")
    disabled_reason: str | None = Field(description="Why the service disabled it (410, days of failures).")


class CreatedWebhook(Webhook):
    """Returned on creation and on rotation: `secret` (shown this once) signs every delivery."""

    secret: str = Field(description="The signing secret, `whsec_` + base64 (Standard Webhooks).")


class WebhookList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Webhook]


class WebhookDelivery(BaseModel):
    """One inbox event on its way to one endpoint; `id` is the `webhook-id` header of every attempt."""

    id: str
    object: Literal["webhook.delivery"] = "webhook.delivery"
    webhook_id: str
    thread_id: str
    cursor: int = Field(description="The event's inbox cursor (also in the body).")
    event_type: str
    status: DeliveryStatus = Field(description="`canceled`: a caller gave up on it while pending.")
    attempts: int
    last_attempt_at: int | None
    last_status: int | None = Field(description="The HTTP status of the last answer; null if none came.")
    last_error: str | None
    next_attempt_at: int | None = Field(description="When the next attempt is due (pending deliveries).")
    created_at: int


class WebhookDeliveryList(BaseModel):
    """Newest first; pass `last_id` as `before` for older ones."""

    object: Literal["list"] = "list"
    data: list[WebhookDelivery]
    last_id: str | None
    has_more: bool
