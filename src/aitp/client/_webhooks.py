"""Receiving webhooks: the verifying side of the service's signed deliveries (Standard Webhooks, checked by
the `standardwebhooks` library that signed them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from standardwebhooks import Webhook, WebhookVerificationError

from aitp.bindings.openai_threads.models import InboxEvent


def verify_webhook(secrets: str | Sequence[str], body: bytes | str, headers: Mapping[str, str]) -> InboxEvent:
    """The inbox event a delivery carries, once its signature (by one of `secrets`: while a secret is rotated,
    the new one and the old) and its timestamp (within five minutes of now) check out; raises
    `WebhookVerificationError` otherwise. Deliveries come at least once: the `webhook-id` header is the same
    on every attempt of one delivery, and the event's `cursor` orders the inbox, to deduplicate by."""
    error = WebhookVerificationError("no secret to verify with")
    for secret in [secrets] if isinstance(secrets, str) else secrets:
        try:
            return InboxEvent.model_validate(Webhook(secret).verify(body, dict(headers)))
        except WebhookVerificationError as refused:
            error = refused
    raise error


__all__ = ["WebhookVerificationError", "verify_webhook"]
