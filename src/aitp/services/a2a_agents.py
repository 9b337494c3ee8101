"""A2A settings of an actor: whether A2A clients may reach it, the capabilities it declares in the threads
they open with it, and, for a remote A2A agent standing in threads as that actor, its Agent Card URL, its
reply policy and the credentials its card asks for.

Set by the actor itself or an admin. The card URL follows the webhooks' destination policy
(`AITP_WEBHOOK_ALLOW`/`AITP_WEBHOOK_DENY`: public addresses, private ones only when allowed), since this
service then sends requests there. Which actors A2A clients may reach is read on every A2A request; it is
kept for `SERVED_TTL` seconds per actor (a change through this process applies at once).

A PUT replaces the settings whole, but for the credentials, which are write-only: given, they replace the
ones held; `None` (or `{}`) clears them; not given (`KEEP`), the ones held are kept while the card URL stays
the same, and dropped with it otherwise (a secret given for one agent is never sent to another). A new card
URL also forgets the tasks the former agent left open in threads.
"""

from __future__ import annotations

from typing import Final, Literal

from aitp.capabilities.declarations import normalize_declaration
from aitp.errors import InvalidRequest, PermissionDenied, Unprocessable
from aitp.principals import Principal
from aitp.recent import Recent
from aitp.runtime import Runtime, now
from aitp.services import identities, inbox, webhooks
from aitp.services.access import own_or_admin
from aitp.services.addressing import REPLY_POLICIES
from aitp.store.a2a import A2AAgentRecord

SERVED_TTL = 5.0
MAX_SERVED = 10_000
MAX_CAPABILITIES = 32
CREDENTIAL_KINDS = ("bearer", "api_key")  # an HTTP bearer (or OAuth2/OpenID Connect) token; an API key
MAX_CREDENTIAL = 4096
KEEP: Final = "keep"  # `put_settings(credentials=KEEP)`: the PUT did not name them
Credentials = dict[str, str] | None | Literal["keep"]


def served(rt: Runtime) -> Recent[str, A2AAgentRecord | None]:
    """This process's recently read A2A settings (`rt.state(served)`)."""
    return Recent(SERVED_TTL, MAX_SERVED)


def _check_owner(principal: Principal, actor: str) -> None:
    own_or_admin(principal, actor, "read or set its A2A settings")


async def settings_of(rt: Runtime, principal: Principal, actor: str) -> A2AAgentRecord:
    _check_owner(principal, actor)
    return await rt.store.a2a.get(actor) or A2AAgentRecord(actor=actor)


async def agent(rt: Runtime, actor: str) -> A2AAgentRecord | None:
    """The settings of an actor A2A clients may reach (None when it is not served)."""

    async def load() -> A2AAgentRecord | None:
        return await rt.store.a2a.get(actor)

    record = await rt.state(served).get(actor, load)
    return record if record is not None and record.serve else None


async def put_settings(
    rt: Runtime,
    principal: Principal,
    actor: str,
    *,
    serve: bool,
    capabilities: list[str],
    card_url: str | None,
    reply_policy: str = "addressed",
    credentials: Credentials = KEEP,
) -> A2AAgentRecord:
    """Replace an actor's A2A settings (its cursor is kept; a new remote starts at the inbox's end). A shop's
    customer has none (403 `customer_not_allowed`)."""
    identities.refuse_customer(principal, "set A2A settings")
    _check_owner(principal, actor)
    if reply_policy not in REPLY_POLICIES:
        raise InvalidRequest(
            f"reply_policy must be one of {', '.join(REPLY_POLICIES)}, not {reply_policy!r}.", param="reply_policy"
        )
    if isinstance(credentials, dict):
        _check_credentials(credentials, card_url)
    if len(capabilities) > MAX_CAPABILITIES:
        raise InvalidRequest(f"At most {MAX_CAPABILITIES} capabilities.", param="capabilities")
    for i, url in enumerate(capabilities):
        normalize_declaration(url, f"capabilities[{i}]")
        if rt.registry.resolve(url) is None:
            raise Unprocessable(
                f"capabilities[{i}]: no registered capability matches {url!r}.",
                param=f"capabilities[{i}]",
                code="unknown_capability",
            )
    if card_url is not None:
        refusal = await webhooks.destination_refusal(card_url, rt.settings)
        if refusal is not None:
            raise PermissionDenied(
                f"A2A agents may not be reached at this URL: {refusal}", param="agent_card_url", code="url_not_allowed"
            )
    held = await rt.store.a2a.get(actor)
    same_agent = held is not None and card_url is not None and held.card_url == card_url
    if credentials == KEEP:
        credentials = held.credentials if held is not None and same_agent else None
    record = A2AAgentRecord(
        actor=actor,
        serve=serve,
        capabilities=list(dict.fromkeys(capabilities)),
        card_url=card_url,
        updated_at=now(),
        cursor=await inbox.position(rt.store),
        reply_policy=reply_policy,
        credentials=dict(credentials or {}),
    )
    await identities.admit(rt, principal, actor)  # a remote agent the admin sets up has no key of its own
    await rt.store.a2a.put(record)
    if held is not None and held.card_url is not None and not same_agent:
        await rt.store.a2a.forget_remote_tasks(actor)  # the former agent's tasks mean nothing to the next
    rt.state(served).forget(actor)
    return await rt.store.a2a.get(actor) or record


def _check_credentials(credentials: dict[str, str], card_url: str | None) -> None:
    """Credentials are for a remote agent, one secret per known kind, sendable as a header value. Refusals
    never repeat a secret."""
    if credentials and card_url is None:
        raise InvalidRequest("credentials are sent to a remote agent: give its agent_card_url.", param="credentials")
    for kind, secret in credentials.items():
        param = f"credentials.{kind}"
        if kind not in CREDENTIAL_KINDS:
            raise InvalidRequest(f"Unknown credential kind (known: {', '.join(CREDENTIAL_KINDS)}).", param=param)
        if not isinstance(secret, str) or not 0 < len(secret) <= MAX_CREDENTIAL:
            raise InvalidRequest(f"{param} must be a string of 1 to {MAX_CREDENTIAL} characters.", param=param)
        if not (secret.isascii() and secret.isprintable()) or secret != secret.strip():
            raise InvalidRequest(
                f"{param} must be printable ASCII without surrounding spaces (it is sent as a header value).",
                param=param,
            )
