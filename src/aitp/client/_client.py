"""`AitpClient`: every route of the aitp HTTP API as one typed async method."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, Self, TypeVar

import httpx

from aitp.bindings.openai_threads.models import (
    Actor,
    ActorList,
    ApiKey,
    ApiKeyList,
    Capability,
    CapabilityExampleList,
    CapabilityList,
    CreatedApiKey,
    DeletedObject,
    Event,
    EventList,
    Identity,
    InboxEvent,
    InboxEventList,
    ListPage,
    Message,
    Thread,
    ThreadCapabilities,
)
from aitp.bindings.openai_threads.models.customer_sessions import CustomerSession
from aitp.bindings.openai_threads.models.identities import ActorIdentity, ContactPolicy
from aitp.bindings.openai_threads.models.presence import Activity, ActorPresence
from aitp.bindings.openai_threads.models.profiles import Profile
from aitp.client._content import ActorSpec, MessageContent, actor_body, content_body, declarations
from aitp.client._http import HttpSession, segment
from aitp.client._sign_in import PrivateKey
from aitp.client._sign_in import sign_in as _sign_in
from aitp.client._stream import LiveStream, Reconnect

Order = Literal["asc", "desc"]
T = TypeVar("T")


def _body(**fields: Any) -> dict[str, Any]:
    # Options left as None are not sent: the server's defaults apply and older servers see no new keys.
    return {k: v for k, v in fields.items() if v is not None}


async def _walk(fetch: Callable[[str | None], Awaitable[ListPage[T]]]) -> AsyncIterator[T]:
    after: str | None = None
    while True:
        page = await fetch(after)
        for item in page.data:
            yield item
        if not page.has_more or page.last_id is None:
            return
        after = page.last_id


def _seq(event: Event) -> int:
    return event.seq


def _cursor(event: InboxEvent) -> int:
    return event.cursor


class AitpClient:
    """An async client of one aitp server, acting as the actor (or admin) its `api_key` belongs to.

    `base_url` is the server's root (`http://127.0.0.1:8000`) or its API URL (`.../v1`). `transport`
    replaces the network, e.g. `httpx.ASGITransport(app)` to talk to an app in the same process.
    Refusals raise `AitpError` subclasses; network failures and timeouts raise httpx's own
    `httpx.TransportError` subclasses unchanged.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 30,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._http = HttpSession(base_url, api_key, timeout=timeout, transport=transport)
        self.expires_at: int | None = None  # when the key ends, for a client that signed in (`sign_in`)

    @classmethod
    async def sign_in(
        cls,
        base_url: str,
        actor: str,
        private_key: PrivateKey,
        *,
        timeout: float = 30,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> AitpClient:
        """A client acting as `actor`, signed in with its own key, no admin needed: a domain agent's private
        key (a JWK, a PEM, a `KeyPair`, or a file holding one; its public half published at
        `https://<host>/.well-known/aitp.json`) or a NEAR account's (`ed25519:...`). The key it gets expires
        (`expires_at`); sign in again then. Refusals raise `AitpError` whose `code` says which step failed."""
        token = await _sign_in(base_url, actor, private_key, timeout=timeout, transport=transport)
        client = cls(base_url, token["key"], timeout=timeout, transport=transport)
        client.expires_at = token["expires_at"]
        return client

    @property
    def base_url(self) -> str:
        """The server's root URL (without `/v1`)."""
        return self._http.root

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool (and the transport)."""
        await self._http.aclose()

    async def health(self) -> dict[str, Any]:
        """`GET /health`: `{"status": "ok", "version": ...}`; needs no key."""
        response = await self._http.request("GET", "/health", api=False)
        result: dict[str, Any] = response.json()
        return result

    async def me(self) -> Identity:
        """`GET /v1/actors/me`: the actor the key acts as (`id`), whether it is an admin, and `inbox_cursor`,
        the inbox's position now (follow `inbox(after=me.inbox_cursor)` to skip what happened before)."""
        return await self._http.call(Identity, "GET", "/actors/me")

    # ------------------------------------------------------------------------------------ threads

    async def create_thread(
        self,
        *,
        actors: Sequence[ActorSpec] | None = None,
        messages: Sequence[MessageContent] | None = None,
        metadata: Mapping[str, str] | None = None,
        parent_id: str | None = None,
        tool_resources: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Thread:
        """Create a thread; the caller joins as its creator (role `user`) even if not listed in `actors`.

        This covers AITP-T01 `POST /v1/thread` too (the server serves both paths with one handler).
        Each actor declares capabilities by URL, `{"schema": url}` or `{"capability": id, "versions": range}`.
        Each of `messages` is content as for `create_message`, written by the caller.
        With an `idempotency_key`, sending the same call again returns the first thread instead of
        creating another (for retries after a timeout or a lost connection; keys are kept 24 h).
        """
        body = _body(
            actors=[actor_body(a) for a in actors] if actors is not None else None,
            messages=[{"content": content_body(m)} for m in messages] if messages is not None else None,
            metadata=dict(metadata) if metadata is not None else None,
            parent_id=parent_id,
            tool_resources=dict(tool_resources) if tool_resources is not None else None,
        )
        return await self._http.call(Thread, "POST", "/threads", json=body, idempotency_key=idempotency_key)

    async def get_thread(self, thread_id: str) -> Thread:
        """A thread the caller is in (any thread for an admin): its actors with their capabilities, metadata and
        turn budget; `NotFound` (`thread_not_found`) alike for a missing thread and one the caller is not in."""
        return await self._http.call(Thread, "GET", f"/threads/{segment(thread_id)}")

    async def update_thread(
        self,
        thread_id: str,
        *,
        metadata: Mapping[str, str] | None = None,
        tool_resources: Mapping[str, Any] | None = None,
        turns: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Thread:
        """Replace the thread's metadata (all of the caller's keys; `actors`/`parent_id` are the server's);
        its creator may change its `turns`: `{"budget": 50, "persons": ["bob.near"]}` (`budget` None: the
        server's default)."""
        body = _body(
            metadata=dict(metadata) if metadata is not None else None,
            tool_resources=dict(tool_resources) if tool_resources is not None else None,
            turns=dict(turns) if turns is not None else None,
        )
        path = f"/threads/{segment(thread_id)}"
        return await self._http.call(Thread, "POST", path, json=body, idempotency_key=idempotency_key)

    async def delete_thread(self, thread_id: str) -> DeletedObject:
        """Delete a thread (its creator or an admin)."""
        return await self._http.call(DeletedObject, "DELETE", f"/threads/{segment(thread_id)}")

    async def list_threads(
        self,
        *,
        limit: int | None = None,
        order: Order | None = None,
        after: str | None = None,
        before: str | None = None,
    ) -> ListPage[Thread]:
        """One page of the caller's threads (every thread for an admin); newest first by default."""
        params = {"limit": limit, "order": order, "after": after, "before": before}
        return await self._http.call(ListPage[Thread], "GET", "/threads", params=params)

    def iter_threads(self, *, order: Order | None = None, page_size: int = 100) -> AsyncIterator[Thread]:
        """Every thread `list_threads` would show, fetching pages as needed."""
        return _walk(lambda after: self.list_threads(limit=page_size, order=order, after=after))

    # ----------------------------------------------------------------------------------- messages

    async def create_message(
        self,
        thread_id: str,
        content: MessageContent,
        *,
        metadata: Mapping[str, str] | None = None,
        attachments: Sequence[Mapping[str, Any]] | None = None,
        idempotency_key: str | None = None,
    ) -> Message:
        """Post a message as the caller; its role is derived (thread creator → user, others → assistant).

        `content` is a string, a capability message (a mapping with `$schema`, sent as one JSON text
        part), an OpenAI content part (any other mapping), or a list of those. With an `idempotency_key`,
        sending the same call again returns the first message instead of posting another.
        """
        body = _body(
            content=content_body(content),
            metadata=dict(metadata) if metadata is not None else None,
            attachments=[dict(a) for a in attachments] if attachments is not None else None,
        )
        path = f"/threads/{segment(thread_id)}/messages"
        return await self._http.call(Message, "POST", path, json=body, idempotency_key=idempotency_key)

    async def get_message(self, thread_id: str, message_id: str) -> Message:
        """One message of a thread the caller is in: its content parts, `metadata.actor` (its author), `role`
        and `aitp` (what the server validated in each part); `NotFound` when there is no such thread (or the
        caller is not in it) or no such message in it."""
        return await self._http.call(Message, "GET", f"/threads/{segment(thread_id)}/messages/{segment(message_id)}")

    async def update_message(self, thread_id: str, message_id: str, *, metadata: Mapping[str, str]) -> Message:
        """Replace a message's metadata (`metadata.actor` always names its author)."""
        path = f"/threads/{segment(thread_id)}/messages/{segment(message_id)}"
        return await self._http.call(Message, "POST", path, json={"metadata": dict(metadata)})

    async def delete_message(self, thread_id: str, message_id: str) -> DeletedObject:
        """Delete a message (its author or an admin)."""
        path = f"/threads/{segment(thread_id)}/messages/{segment(message_id)}"
        return await self._http.call(DeletedObject, "DELETE", path)

    async def list_messages(
        self,
        thread_id: str,
        *,
        limit: int | None = None,
        order: Order | None = None,
        after: str | None = None,
        before: str | None = None,
    ) -> ListPage[Message]:
        """One page of a thread's messages; newest first unless `order="asc"`. `limit` is 1..100 (default 20)."""
        params = {"limit": limit, "order": order, "after": after, "before": before}
        return await self._http.call(ListPage[Message], "GET", f"/threads/{segment(thread_id)}/messages", params=params)

    def iter_messages(
        self, thread_id: str, *, order: Order | None = None, after: str | None = None, page_size: int = 100
    ) -> AsyncIterator[Message]:
        """Every message of a thread (from `after` on), fetching pages as needed."""

        def fetch(cursor: str | None) -> Awaitable[ListPage[Message]]:
            return self.list_messages(thread_id, limit=page_size, order=order, after=cursor or after)

        return _walk(fetch)

    # ------------------------------------------------------------------------------------- actors

    async def list_actors(self, thread_id: str) -> list[Actor]:
        """The thread's actors in the order they joined (the creator first)."""
        listed = await self._http.call(ActorList, "GET", f"/threads/{segment(thread_id)}/actors")
        return listed.data

    async def put_actor(
        self,
        thread_id: str,
        actor_id: str,
        *,
        capabilities: Sequence[str | Mapping[str, Any]] = (),
        client_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Actor:
        """Add an actor to the thread (any member may), or replace its capability declarations (itself or an admin)."""
        body = _body(id=actor_id, client_id=client_id, capabilities=declarations(capabilities))
        path = f"/threads/{segment(thread_id)}/actors"
        return await self._http.call(Actor, "POST", path, json=body, idempotency_key=idempotency_key)

    async def remove_actor(self, thread_id: str, actor_id: str) -> DeletedObject:
        """Leave (`actor_id` is the caller), or remove another actor (the thread's creator or an admin)."""
        path = f"/threads/{segment(thread_id)}/actors/{segment(actor_id)}"
        return await self._http.call(DeletedObject, "DELETE", path)

    async def get_thread_capabilities(self, thread_id: str) -> ThreadCapabilities:
        """Per declared capability, the highest version every current actor reads, and who does not."""
        return await self._http.call(ThreadCapabilities, "GET", f"/threads/{segment(thread_id)}/capabilities")

    # ------------------------------------------------------------------------------------- events
    # `list_events`/`iter_events` read the stored log and return at its current end; `events`,
    # `stream` and `inbox` follow it live over a WebSocket (`_stream.py`), resuming from the same cursor.

    async def list_events(self, thread_id: str, *, after: int = 0, limit: int | None = None) -> EventList:
        """Events with `seq > after`, oldest first; resume with `after=page.last_seq`. `limit` is 1..1000."""
        params = {"after": after, "limit": limit}
        return await self._http.call(EventList, "GET", f"/threads/{segment(thread_id)}/events", params=params)

    async def iter_events(self, thread_id: str, *, after: int = 0, page_size: int = 1000) -> AsyncIterator[Event]:
        """Every logged event with `seq > after`, fetching pages until the log's current end (no waiting)."""
        while True:
            page = await self.list_events(thread_id, after=after, limit=page_size)
            for event in page.data:
                yield event
            if not page.has_more:
                return
            after = page.last_seq

    def stream(self, thread_id: str, *, after: int = 0, reconnect: Reconnect | None = None) -> LiveStream[Event]:
        """The thread's events with `seq > after`, then live, plus posts on the same socket:

            async with client.stream(thread_id) as stream:
                await stream.post("I want socks")
                async for event in stream: ...

        Drops and slow-consumer closes are resumed from the last `seq` (no gap, no duplicate); iteration
        ends when the thread is deleted or the caller removed from it. A non-member gets `NotFound`.
        Streams connect to `base_url` over the network: a `transport` given to the client does not apply.
        """
        path = f"/threads/{segment(thread_id)}/events/ws"
        return LiveStream(self._http, path, Event, _seq, after=after, reconnect=reconnect)

    async def events(
        self, thread_id: str, *, after: int = 0, reconnect: Reconnect | None = None
    ) -> AsyncGenerator[Event, None]:
        """Every event with `seq > after`, then live ones as they happen (see `stream`).

        To stop early and close the socket at once: `async with contextlib.aclosing(client.events(...)) as events`.
        """
        async with self.stream(thread_id, after=after, reconnect=reconnect) as stream:
            async for event in stream:
                yield event

    async def inbox(
        self, *, after: int | None = None, reconnect: Reconnect | None = None
    ) -> AsyncGenerator[InboxEvent, None]:
        """Events of every thread the caller is in (from joining to leaving) with `cursor > after`, then live;
        new threads that add the caller included. Never ends by itself; resumes like `stream`.

        Without `after` it starts at the inbox's end when iteration starts (`me().inbox_cursor` then), as
        `Agent.run()` does: what happened before is not handed over again. `after=0` replays the whole
        inbox first; `after=event.cursor` resumes after an event handled. To miss nothing of what the caller
        is about to do (create a thread, post), take `(await client.me()).inbox_cursor` before doing it and
        pass that."""
        if after is None:  # the end now: an agent started without a cursor must not answer the past again
            after = (await self.me()).inbox_cursor
        stream = LiveStream(self._http, "/actors/me/events/ws", InboxEvent, _cursor, after=after, reconnect=reconnect)
        async with stream:
            async for event in stream:
                yield event

    async def list_inbox(self, *, after: int = 0, limit: int | None = None) -> InboxEventList:
        """One page of the inbox with `cursor > after`, oldest first; resume with `after=page.last_cursor`."""
        params = {"after": after, "limit": limit}
        return await self._http.call(InboxEventList, "GET", "/actors/me/events", params=params)

    # ------------------------------------------------------------------------ capability registry

    async def list_capabilities(self) -> list[Capability]:
        """Every registered capability, sorted by id."""
        return (await self._http.call(CapabilityList, "GET", "/capabilities")).data

    async def get_capability(self, capability_id: str) -> Capability:
        """A registered capability by id (e.g. `aitp-02-decisions`): its published versions, their schema and
        example URLs, and its aliases; `NotFound` (`capability_not_found`) for one not registered here."""
        return await self._http.call(Capability, "GET", f"/capabilities/{segment(capability_id)}")

    async def get_capability_schema(self, capability_id: str, version: str) -> dict[str, Any]:
        """A version's schema document exactly as published (the target of its `$schema` URL)."""
        path = f"/capabilities/{segment(capability_id)}/{segment(version)}/schema.json"
        schema: dict[str, Any] = (await self._http.request("GET", path)).json()
        return schema

    async def get_capability_examples(self, capability_id: str, version: str) -> CapabilityExampleList:
        """A version's example messages, each `{name, type, message}`: payload shapes to copy from."""
        path = f"/capabilities/{segment(capability_id)}/{segment(version)}/examples"
        return await self._http.call(CapabilityExampleList, "GET", path)

    async def register_capability(
        self,
        capability_id: str,
        version: str,
        schema: Mapping[str, Any],
        *,
        examples: Sequence[Mapping[str, Any]] | None = None,
        aliases: Sequence[str] | None = None,
        title: str | None = None,
        description: str | None = None,
        openapi_root: str | None = None,
    ) -> Capability:
        """Register a capability version (admin, or a key with the `capabilities:write` scope).

        Published versions are immutable: re-registering identical content returns the capability,
        different content is a `Conflict`. Every example must validate against `schema`.
        """
        body = _body(
            id=capability_id,
            version=version,
            schema=dict(schema),
            examples=[dict(e) for e in examples] if examples is not None else None,
            aliases=list(aliases) if aliases is not None else None,
            title=title,
            description=description,
            openapi_root=openapi_root,
        )
        return await self._http.call(Capability, "POST", "/capabilities", json=body)

    # ----------------------------------------------------------------------------------- identity

    async def get_actor(self, actor_id: str) -> ActorIdentity:
        """`GET /v1/actors/{id}`: the actor's kind (`domain`, `near`, `customer`, `local`) and `verification`, with its
        profile when it is verified (or the caller itself); 404 `actor_not_found` for an actor unknown here."""
        return await self._http.call(ActorIdentity, "GET", f"/actors/{segment(actor_id)}")

    # ----------------------------------------------------------------------------------- presence

    async def get_presence(self, actor_id: str) -> ActorPresence:
        """`GET /v1/actors/{id}/presence`: whether the actor can be reached now (`reachable`, and `via`: its inbox
        followed live, a webhook that delivers, an A2A agent that answers) and `usually_replies_in` (median
        seconds, or None); 404 `actor_not_found` for an actor the caller may not see ("me": the caller)."""
        return await self._http.call(ActorPresence, "GET", f"/actors/{segment(actor_id)}/presence")

    async def set_activity(
        self,
        thread_id: str,
        state: Literal["working", "idle"],
        *,
        expires_in: int | None = None,
    ) -> Activity:
        """Say the caller is `working` on an answer in the thread (for `expires_in` seconds, 1 to 60; 15 by
        default: say it again to hold it longer), or `idle`. The other members' live streams show it; nothing
        keeps it, and the caller's next message in the thread ends it."""
        body = _body(state=state, expires_in=expires_in)
        return await self._http.call(Activity, "POST", f"/threads/{segment(thread_id)}/activity", json=body)

    async def working(self, thread_id: str, *, expires_in: int | None = None) -> Activity:
        """`set_activity(thread_id, "working")`: a typing indicator for the others in the thread."""
        return await self.set_activity(thread_id, "working", expires_in=expires_in)

    async def idle(self, thread_id: str) -> Activity:
        """`set_activity(thread_id, "idle")`: no longer working on an answer there."""
        return await self.set_activity(thread_id, "idle")

    async def get_profile(self) -> Profile:
        """The caller's own profile (name, avatar, description, brand colour) with how it is verified."""
        return await self._http.call(Profile, "GET", "/actors/me/profile")

    async def set_profile(
        self,
        *,
        display_name: str | None = None,
        avatar_url: str | None = None,
        description: str | None = None,
        accent_color: str | None = None,
    ) -> Profile:
        """Replace the caller's profile: what the people it meets see (a field left out is cleared). A business
        shows its customers `display_name`, `avatar_url` (its logo: an https URL or a small data: image) and
        `accent_color` (`#rrggbb`)."""
        body = {
            "display_name": display_name,
            "avatar_url": avatar_url,
            "description": description,
            "accent_color": accent_color,
        }
        return await self._http.call(Profile, "PUT", "/actors/me/profile", json=body)

    async def get_contact_policy(self) -> ContactPolicy:
        """Who may bring the caller's actor into a thread."""
        return await self._http.call(ContactPolicy, "GET", "/actors/me/contact_policy")

    async def set_contact_policy(
        self, policy: Literal["anyone", "verified", "allow_list", "nobody"], *, allow: Sequence[str] | None = None
    ) -> ContactPolicy:
        """Set who may bring the caller's actor into a thread: `anyone` (a business serving the public),
        `verified` (domain and NEAR actors), `allow_list` (the ids in `allow`) or `nobody`."""
        body = _body(policy=policy, allow=None if allow is None else list(allow))
        return await self._http.call(ContactPolicy, "PUT", "/actors/me/contact_policy", json=body)

    async def create_customer_session(
        self,
        customer: str,
        display_name: str | None = None,
        expires_in: int | None = None,
        *,
        shop: str | None = None,
        upgrade_from: str | None = None,
        idempotency_key: str | None = None,
    ) -> CustomerSession:
        """`POST /v1/customer_sessions`, from a shop's backend: a key of the shop's customer `customer` (its own
        id for a customer signed in on its website, e.g. "4821"), acting as `<customer>@<shop>` until
        `expires_at` (`expires_in` seconds, 60 to 86400; 3600 by default). The customer talks with the shop
        only. `display_name` becomes the customer's profile name; an admin key names the `shop`; `upgrade_from`
        (the key of the shop's anonymous visitor who has just signed in) moves the visitor's threads to the
        customer. The secret (`.key`) is returned this once: hand it to the customer's browser, never in a URL."""
        body = _body(
            customer=customer, shop=shop, display_name=display_name, expires_in=expires_in, upgrade_from=upgrade_from
        )
        return await self._http.call(
            CustomerSession, "POST", "/customer_sessions", json=body, idempotency_key=idempotency_key
        )

    # --------------------------------------------------------------------------- API keys (admin)

    async def create_key(self, actor: str, *, admin: bool = False, scopes: Sequence[str] = ()) -> CreatedApiKey:
        """A new key acting as `actor`; its secret (`.key`) is returned this once only."""
        body = {"actor": actor, "admin": admin, "scopes": list(scopes)}
        return await self._http.call(CreatedApiKey, "POST", "/keys", json=body)

    async def list_keys(self) -> list[ApiKey]:
        """Every key, without secrets (only their first characters, `prefix`)."""
        return (await self._http.call(ApiKeyList, "GET", "/keys")).data

    async def revoke_key(self, key_id: str) -> DeletedObject:
        """Revoke a key by its id (`key_...`, as `list_keys` shows; admin only): this server refuses it at once,
        other instances of the service within a second. `NotFound` (`key_not_found`) for an unknown id."""
        return await self._http.call(DeletedObject, "DELETE", f"/keys/{segment(key_id)}")
