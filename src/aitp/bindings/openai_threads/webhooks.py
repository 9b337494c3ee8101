"""Webhooks (AITP extension): an actor's endpoints, their signing secrets and their deliveries."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from aitp.bindings.http.deps import PrincipalDep, RuntimeDep
from aitp.bindings.http.errors import BODY, KEYED, error_responses
from aitp.bindings.http.idempotency import idempotent
from aitp.bindings.http.responses import FastJSONResponse
from aitp.bindings.http.route import ApiRoute
from aitp.bindings.openai_threads.models import DeletedObject
from aitp.bindings.openai_threads.models.webhooks import (
    CreatedWebhook,
    CreateWebhookRequest,
    DeliveryStatus,
    ModifyWebhookRequest,
    Webhook,
    WebhookDelivery,
    WebhookDeliveryList,
    WebhookList,
)
from aitp.services import webhooks
from aitp.store.webhooks import DeliveryRecord, EndpointRecord

router = APIRouter(prefix="/v1", tags=["webhooks"], route_class=ApiRoute)


def _seconds(value: float | None) -> int | None:
    return None if value is None else int(value)


def render(record: EndpointRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "object": "webhook",
        "actor": record.actor,
        "url": record.url,
        "event_types": record.event_types,
        "messages": record.messages,
        "on_client_error": record.on_client_error,
        "ordering": record.ordering,
        "description": record.description,
        "enabled": record.enabled,
        "created_at": record.created_at,
        "failing_since": _seconds(record.failing_since),
        "disabled_reason": record.disabled_reason,
    }


def render_with_secret(record: EndpointRecord) -> dict[str, Any]:
    return {**render(record), "secret": record.secrets[0].secret}


def render_delivery(record: DeliveryRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "object": "webhook.delivery",
        "webhook_id": record.endpoint_id,
        "thread_id": record.thread_id,
        "cursor": record.gid,
        "event_type": record.type,
        "status": record.status,
        "attempts": record.attempts,
        "last_attempt_at": _seconds(record.last_attempt_at),
        "last_status": record.last_status,
        "last_error": record.last_error,
        "next_attempt_at": _seconds(record.next_attempt_at) if record.status == "pending" else None,
        "created_at": int(record.created_at),
    }


@router.post(
    "/webhooks",
    responses=error_responses(*KEYED, *BODY, 403),
    response_model=CreatedWebhook,
    summary="Register a webhook for the caller's inbox (the signing secret is shown once)",
)
@idempotent(secret="secret")
async def create_webhook(body: CreateWebhookRequest, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    created = await webhooks.create_webhook(
        rt,
        principal,
        body.url,
        event_types=list(body.event_types),
        messages=body.messages,
        on_client_error=body.on_client_error,
        ordering=body.ordering,
        description=body.description,
        actor=body.actor,
        enabled=body.enabled,
    )
    return FastJSONResponse(render_with_secret(created))


@router.get("/webhooks", responses=error_responses(*KEYED), response_model=WebhookList, summary="List webhooks")
async def list_webhooks(rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    found = await webhooks.list_webhooks(rt, principal)
    return FastJSONResponse({"object": "list", "data": [render(e) for e in found]})


@router.get(
    "/webhooks/{webhook_id}", responses=error_responses(*KEYED, 404), response_model=Webhook, summary="Get a webhook"
)
async def get_webhook(webhook_id: str, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    return FastJSONResponse(render(await webhooks.get_webhook(rt, principal, webhook_id)))


@router.patch(
    "/webhooks/{webhook_id}",
    responses=error_responses(*KEYED, *BODY, 403, 404),
    response_model=Webhook,
    summary="Change a webhook's URL, event types, messages, policies, description, or enable/disable it",
)
async def modify_webhook(
    webhook_id: str, body: ModifyWebhookRequest, rt: RuntimeDep, principal: PrincipalDep
) -> FastJSONResponse:
    given = {name: getattr(body, name) for name in body.model_fields_set}
    if "event_types" in given:
        given["event_types"] = list(given["event_types"])
    updated = await webhooks.update_webhook(rt, principal, webhook_id, **given)
    return FastJSONResponse(render(updated))


@router.post(
    "/webhooks/{webhook_id}/rotate_secret",
    responses=error_responses(*KEYED, *BODY, 404),
    response_model=CreatedWebhook,
    summary="A new signing secret; the previous one still signs for a grace period",
)
@idempotent(secret="secret")
async def rotate_secret(webhook_id: str, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    return FastJSONResponse(render_with_secret(await webhooks.rotate_secret(rt, principal, webhook_id)))


@router.delete(
    "/webhooks/{webhook_id}",
    responses=error_responses(*KEYED, 404),
    response_model=DeletedObject,
    summary="Delete a webhook and its deliveries",
)
async def delete_webhook(webhook_id: str, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    await webhooks.delete_webhook(rt, principal, webhook_id)
    return FastJSONResponse({"id": webhook_id, "object": "webhook.deleted", "deleted": True})


@router.get(
    "/webhooks/{webhook_id}/deliveries",
    responses=error_responses(*KEYED, 400, 404),
    response_model=WebhookDeliveryList,
    summary="A webhook's deliveries within the retention period, newest first, of one status if given",
)
async def list_deliveries(
    webhook_id: str,
    rt: RuntimeDep,
    principal: PrincipalDep,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    before: Annotated[str | None, Query(max_length=128)] = None,
    status: Annotated[DeliveryStatus | None, Query()] = None,
) -> FastJSONResponse:
    found, more = await webhooks.list_deliveries(rt, principal, webhook_id, limit=limit, before=before, status=status)
    data = [render_delivery(d) for d in found]
    return FastJSONResponse(
        {"object": "list", "data": data, "last_id": found[-1].id if found else None, "has_more": more}
    )


@router.post(
    "/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver",
    responses=error_responses(*KEYED, *BODY, 404),
    response_model=WebhookDelivery,
    summary="Make a delivery again, now (same id)",
)
@idempotent()
async def redeliver(webhook_id: str, delivery_id: str, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    return FastJSONResponse(render_delivery(await webhooks.redeliver(rt, principal, webhook_id, delivery_id)))


@router.post(
    "/webhooks/{webhook_id}/deliveries/{delivery_id}/cancel",
    responses=error_responses(*KEYED, *BODY, 404, 409),
    response_model=WebhookDelivery,
    summary="Give up a pending delivery: it is canceled and its thread's next one goes",
)
@idempotent()
async def cancel_delivery(
    webhook_id: str, delivery_id: str, rt: RuntimeDep, principal: PrincipalDep
) -> FastJSONResponse:
    return FastJSONResponse(render_delivery(await webhooks.cancel_delivery(rt, principal, webhook_id, delivery_id)))
