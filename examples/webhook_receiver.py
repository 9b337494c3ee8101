"""A webhook receiver: a small ASGI app that checks each delivery's signature and prints its event.

    AITP_WEBHOOK_SECRET=whsec_... uvicorn examples.webhook_receiver:app --port 9000

Register it first with the key of the actor whose inbox it receives (the answer's `secret` is shown once):

    curl -sS "$AITP_URL/v1/webhooks" -H "Authorization: Bearer $AITP_KEY" -H 'content-type: application/json' \
      -d '{"url": "https://your.host/"}'

A delivery is answered 204 once handled (the service retries anything else, so the same event may come
again: its `webhook-id` tells), 401 when its signature does not check out.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from typing import Any

from aitp.client import InboxEvent, WebhookVerificationError, verify_webhook

SECRET = os.environ.get("AITP_WEBHOOK_SECRET", "")
REMEMBERED = 10_000  # delivery ids kept to drop repeats (a retry whose first answer was lost)
seen: OrderedDict[str, None] = OrderedDict()


def handle(event: InboxEvent) -> None:
    print(f"{event.cursor} {event.type} {event.thread_id}", flush=True)


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    body, more = b"", True
    while more:
        message = await receive()
        body, more = body + message.get("body", b""), message.get("more_body", False)
    headers = {name.decode(): value.decode() for name, value in scope["headers"]}
    try:
        event = verify_webhook(SECRET, body, headers)
    except WebhookVerificationError:
        status = 401
    else:
        status = 204
        if headers["webhook-id"] not in seen:
            seen[headers["webhook-id"]] = None
            if len(seen) > REMEMBERED:
                seen.popitem(last=False)
            handle(event)
    await send({"type": "http.response.start", "status": status, "headers": []})
    await send({"type": "http.response.body", "body": b""})
