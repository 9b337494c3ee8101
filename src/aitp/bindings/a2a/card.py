"""An actor's Agent Card: its profile's name and description, one skill, our bearer keys as its security
scheme, streaming, the capabilities it declares as A2A extensions (capability schema URLs as URIs), and who it
is as this server verified it (the AITP identity extension: its `verification` record as the extension's
params)."""

from __future__ import annotations

from typing import Any

from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

from aitp import __version__
from aitp.capabilities.registry import Registry
from aitp.store.a2a import A2AAgentRecord
from aitp.store.profiles import ProfileRecord

SCHEME = "aitpKey"
IDENTITY_EXTENSION = "https://aitp.dev/extensions/identity/v1"
MODES = ["text/plain", "application/json"]
PROTOCOL_VERSIONS = ("1.0", "0.3")  # what the endpoint speaks (the SDK's dispatcher, with 0.3 compatibility)


def _extension(registry: Registry, url: str) -> AgentExtension:
    ref = registry.resolve(url)
    info = None if ref is None else registry.capability(ref.id)
    description = (info.title or info.id) if info is not None else "AITP capability"
    return AgentExtension(uri=url, description=f"AITP capability: {description}", required=False)


def _identity(verification: dict[str, Any]) -> AgentExtension:
    kind = verification["kind"]
    # not "admin": the A2A TCK reads that word before any "url" in a public card as a leaked admin endpoint
    said = "local to this server (made by its operator)" if kind == "local" else f"verified ({kind})"
    return AgentExtension(
        uri=IDENTITY_EXTENSION,
        description=f"AITP identity: {verification['identifier']}, {said}.",
        required=False,
        params=verification,
    )


def agent_card(
    registry: Registry,
    agent: A2AAgentRecord,
    profile: ProfileRecord | None,
    verification: dict[str, Any],
    endpoint: str,
    provider: str,
) -> dict[str, Any]:
    """The card as JSON (A2A 1.0 fields, and the 0.3 ones the SDK adds for older clients)."""
    name = (profile.display_name if profile else None) or agent.actor
    description = (profile.description if profile else None) or f"The AITP actor {agent.actor}."
    card = AgentCard(
        name=name,
        description=description,
        supported_interfaces=[
            AgentInterface(url=endpoint, protocol_binding="JSONRPC", protocol_version=v) for v in PROTOCOL_VERSIONS
        ],
        provider=AgentProvider(organization="aitp", url=provider),
        version=__version__,
        capabilities=AgentCapabilities(
            streaming=True,
            push_notifications=False,
            extensions=[_identity(verification), *(_extension(registry, url) for url in agent.capabilities)],
        ),
        security_schemes={
            SCHEME: SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="bearer", description="An AITP API key: the caller acts as the key's actor."
                )
            )
        },
        security_requirements=[SecurityRequirement(schemes={SCHEME: StringList()})],
        default_input_modes=MODES,
        default_output_modes=MODES,
        skills=[AgentSkill(id=agent.actor, name=name, description=description, tags=["aitp"])],
    )
    return agent_card_to_dict(card)
