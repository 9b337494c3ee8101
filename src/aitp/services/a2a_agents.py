"""A2A settings of an actor: whether A2A clients may reach it, the capabilities it declares in the threads
they open with it, and, for a remote A2A agent standing in threads as that actor, its Agent Card URL.

Set by the actor itself or an admin. The card URL follows the webhooks' destination policy
(`AITP_WEBHOOK_ALLOW`/`AITP_WEBHOOK_DENY`: public addresses, private ones only when allowed), since this
service then sends requests there. Which actors A2A clients may reach is read on every A2A request; it is
kept for `SERVED_TTL` seconds per actor (a change through this process applies at once).
"""

from __future__ import annotations

from aitp.capabilities.declarations import normalize_declaration
from aitp.errors import InvalidRequest, PermissionDenied, Unprocessable
from aitp.principals import Principal
from aitp.recent import Recent
from aitp.runtime import Runtime, now
from aitp.services import identities, inbox, webhooks
from aitp.services.access import own_or_admin
from aitp.store.a2a import A2AAgentRecord

SERVED_TTL = 5.0
MAX_SERVED = 10_000
MAX_CAPABILITIES = 32


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
) -> A2AAgentRecord:
    """Replace an actor's A2A settings (its cursor is kept; a new remote starts at the inbox's end)."""
    _check_owner(principal, actor)
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
    record = A2AAgentRecord(
        actor=actor,
        serve=serve,
        capabilities=list(dict.fromkeys(capabilities)),
        card_url=card_url,
        updated_at=now(),
        cursor=await inbox.position(rt.store),
    )
    await identities.admit(rt, principal, actor)  # a remote agent the admin sets up has no key of its own
    await rt.store.a2a.put(record)
    rt.state(served).forget(actor)
    return await rt.store.a2a.get(actor) or record
