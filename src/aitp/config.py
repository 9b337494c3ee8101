"""Settings, read once from `AITP_*` environment variables (CLI flags override them)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from aitp.store.identities import CONTACT_POLICIES

DEFAULT_STORE = "sqlite:///" + str(Path("aitp-data") / "aitp.db")
# the longest lifetime a setting may give (a key's, a stored record's): its expiry stays an integer stores keep
MAX_DAYS = 36_500


@dataclass(frozen=True)
class Settings:
    store_url: str = DEFAULT_STORE
    admin_key: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    capabilities_dir: str | None = None  # None: the shipped capabilities (aitp.shipped)
    web_dir: str | None = None  # None: the shipped chat UI (aitp.shipped)
    unknown_capabilities: Literal["reject", "accept"] = "reject"
    stream_buffer: int = 1024  # events buffered per live subscriber before it is closed as too slow
    keepalive_seconds: float = 15.0  # SSE comment / WebSocket ping interval
    poll_interval: float = 0.1  # seconds between reads of the shared event log while idle (other instances)
    ws_compression: bool = False  # permessage-deflate: ~35 KiB more per WebSocket and CPU per frame sent
    # input limits (aitp.inputs.limits; the body as a whole: aitp.bindings.http.context): refused with 4xx before
    # any expensive work
    max_body_bytes: int = 1 << 20  # request body, and a WebSocket frame
    # the connection, below the app (aitp.server.http_protocol.LimitedHttpProtocol): 431, 408 and 503 refusals
    max_header_bytes: int = 64 << 10  # request line and header fields together
    max_headers: int = 100  # header fields per request
    header_timeout: float = 10.0  # seconds for a request head to arrive whole (and for a new connection's first)
    max_connections: int = 10_000  # open connections, WebSockets and streams included (0: the file limit only)
    max_content_parts: int = 32  # content parts per message
    max_part_chars: int = 256_000  # characters per content part (OpenAI: 256,000 per message)
    max_actors: int = 64  # actors per thread
    max_thread_messages: int = 32  # messages sent with a new thread
    max_capabilities: int = 32  # capability declarations per actor
    max_schema_bytes: int = 256 << 10  # a registered schema, as compact JSON
    max_schema_depth: int = 32  # nesting of a registered schema
    max_json_depth: int = 32  # nesting of capability messages and other free-form JSON fields
    # a registered schema's cost (aitp.capabilities.complexity, .trial): subschemas that may check one message
    # node, and the CPU time and memory its compile may take (tried in a child process first)
    max_schema_expansion: int = 1000
    max_schema_compile_seconds: float = 1.0
    max_schema_compile_bytes: int = 128 << 20
    # per key, in-process (each instance counts its own): requests per second (0: no limit), burst
    rate_limit: float = 50.0
    rate_burst: int = 100
    max_streams_per_key: int = 64  # open WebSocket + SSE streams per key (0: no limit)
    idempotency_ttl_hours: float = 24.0  # how long an Idempotency-Key's response is kept (at least 24)
    sign_in_key_days: float = 30.0  # how long a key made by redeeming a sign-in link (a browser's) works
    # GET /v1/fetch (json_url forms): URL prefixes it may load (empty: none), size and time limits
    fetch_allow: tuple[str, ...] = ()
    fetch_max_bytes: int = 256 << 10
    fetch_timeout: float = 5.0
    # webhooks (aitp.services.webhooks, aitp.deliveries): where they may go, how long an attempt and its retries
    # take, when a failing endpoint is disabled, how long a rotated-out secret still signs, and how long an
    # instance holds an attempt (a crashed instance's attempts are taken over after it; at least timeout + 5 s)
    webhook_allow: tuple[str, ...] = ()  # URL prefixes admitted even on private or loopback addresses
    webhook_deny: tuple[str, ...] = ()  # URL prefixes refused wherever they point
    webhook_timeout: float = 10.0
    webhook_retry_hours: float = 24.0
    webhook_retry_base: float = 5.0  # seconds before the first retry, then doubling (up to an hour), jittered
    webhook_disable_days: float = 5.0
    webhook_secret_grace_hours: float = 24.0
    webhook_lease_seconds: float = 60.0
    # how long a finished (succeeded, failed, canceled) webhook delivery stays in the delivery log, then pruned
    webhook_retention_days: float = 7.0
    # A2A (aitp.bindings.a2a): how long message/send waits for the agent's answer before it returns the task
    # still working, and the actor whose Agent Card is also served at the host's /.well-known/agent-card.json
    a2a_wait_seconds: float = 30.0
    a2a_root_agent: str | None = None
    # A2A outbound (aitp.deliveries.a2a): the largest remote Agent Card read, and the largest answer read from a
    # remote agent (a streamed one whole; 0: AITP_MAX_BODY_BYTES); more is refused unread
    a2a_card_max_bytes: int = 256 << 10
    a2a_reply_max_bytes: int = 0
    # identity (aitp.services.identities, .sign_in): who may contact a new actor unless it says otherwise, new
    # threads a creator may open per hour (0: no limit; admins have none), which kinds of actor may sign in
    # without an admin, how long a challenge and a signed-in key last, sign-in attempts per minute per actor
    # and per client address (in-process), the origin proofs are made for (None: the request's own)
    contact_policy: str = "verified"
    new_threads_per_hour: int = 1000
    # several agents in one thread (aitp.services.turns): messages agents may post in a row with no person's (0: no
    # limit; a thread's creator may set its own), and one agent's messages per minute in one thread, in bursts of
    # `agent_burst` (0: no limit; counted in this process)
    turn_budget: int = 20
    agent_messages_per_minute: float = 30.0
    agent_burst: int = 10
    sign_in_kinds: tuple[str, ...] = ("domain", "near")
    sign_in_challenge_seconds: float = 300.0
    sign_in_token_hours: float = 24.0
    sign_in_attempts_per_minute: float = 10.0
    sign_in_address_attempts_per_minute: float = 60.0
    public_url: str | None = None
    # a domain actor's keys at https://<host>/.well-known/aitp.json: URL prefixes admitted on private or loopback
    # addresses and over plain http (tests, private deployments), size and time limits
    identity_allow: tuple[str, ...] = ()
    identity_max_bytes: int = 64 << 10
    identity_timeout: float = 5.0
    # a named NEAR account's full-access keys are looked up through this JSON-RPC endpoint
    near_rpc_url: str = "https://rpc.mainnet.near.org"
    # roles (aitp.services.messages): a message's role is derived from its author (the creator and the persons it
    # marks speak as `user`, every other actor as `assistant`); a client that claims another has it replaced and
    # is told so, or, when this is on, is refused (400 `role_mismatch`)
    strict_roles: bool = False
    # sign-in codes (POST /v1/sign-in, aitp.services.sign_in): refused codes per minute per client address, in
    # bursts of as many (then 429; 0: no limit; counted in this process): a code's length is not the only guard
    sign_in_code_failures_per_minute: float = 10.0

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        return cls(
            store_url=env.get("AITP_STORE") or DEFAULT_STORE,
            admin_key=env.get("AITP_ADMIN_KEY") or None,
            host=env.get("AITP_HOST") or cls.host,
            port=int(env.get("AITP_PORT") or cls.port),
            capabilities_dir=env.get("AITP_CAPABILITIES_DIR") or None,
            web_dir=env.get("AITP_WEB_DIR") or None,
            unknown_capabilities=_unknown_policy(env.get("AITP_UNKNOWN_CAPABILITIES") or "reject"),
            stream_buffer=int(env.get("AITP_STREAM_BUFFER") or cls.stream_buffer),
            keepalive_seconds=float(env.get("AITP_KEEPALIVE_SECONDS") or cls.keepalive_seconds),
            poll_interval=float(env.get("AITP_POLL_INTERVAL") or cls.poll_interval),
            ws_compression=(env.get("AITP_WS_COMPRESSION") or "0").lower() in ("1", "true", "yes", "on"),
            max_body_bytes=int(env.get("AITP_MAX_BODY_BYTES") or cls.max_body_bytes),
            max_header_bytes=int(env.get("AITP_MAX_HEADER_BYTES") or cls.max_header_bytes),
            max_headers=int(env.get("AITP_MAX_HEADERS") or cls.max_headers),
            header_timeout=float(env.get("AITP_HEADER_TIMEOUT") or cls.header_timeout),
            max_connections=int(env.get("AITP_MAX_CONNECTIONS") or cls.max_connections),
            max_content_parts=int(env.get("AITP_MAX_CONTENT_PARTS") or cls.max_content_parts),
            max_part_chars=int(env.get("AITP_MAX_PART_CHARS") or cls.max_part_chars),
            max_actors=int(env.get("AITP_MAX_ACTORS") or cls.max_actors),
            max_thread_messages=int(env.get("AITP_MAX_THREAD_MESSAGES") or cls.max_thread_messages),
            max_capabilities=int(env.get("AITP_MAX_CAPABILITIES") or cls.max_capabilities),
            max_schema_bytes=int(env.get("AITP_MAX_SCHEMA_BYTES") or cls.max_schema_bytes),
            max_schema_depth=int(env.get("AITP_MAX_SCHEMA_DEPTH") or cls.max_schema_depth),
            max_json_depth=int(env.get("AITP_MAX_JSON_DEPTH") or cls.max_json_depth),
            max_schema_expansion=int(env.get("AITP_MAX_SCHEMA_EXPANSION") or cls.max_schema_expansion),
            max_schema_compile_seconds=float(
                env.get("AITP_MAX_SCHEMA_COMPILE_SECONDS") or cls.max_schema_compile_seconds
            ),
            max_schema_compile_bytes=int(env.get("AITP_MAX_SCHEMA_COMPILE_BYTES") or cls.max_schema_compile_bytes),
            rate_limit=float(env.get("AITP_RATE_LIMIT") or cls.rate_limit),
            rate_burst=int(env.get("AITP_RATE_BURST") or cls.rate_burst),
            max_streams_per_key=int(env.get("AITP_MAX_STREAMS_PER_KEY") or cls.max_streams_per_key),
            # retries a day later must still be safe
            idempotency_ttl_hours=_number(
                "AITP_IDEMPOTENCY_TTL_HOURS",
                env.get("AITP_IDEMPOTENCY_TTL_HOURS") or cls.idempotency_ttl_hours,
                24,
                MAX_DAYS * 24,
                low_allowed=True,
            ),
            sign_in_key_days=_number(
                "AITP_SIGN_IN_KEY_DAYS",
                env.get("AITP_SIGN_IN_KEY_DAYS") or cls.sign_in_key_days,
                0,
                MAX_DAYS,
                low_allowed=False,
            ),
            fetch_allow=_prefixes(env.get("AITP_FETCH_ALLOW")),
            fetch_max_bytes=int(env.get("AITP_FETCH_MAX_BYTES") or cls.fetch_max_bytes),
            fetch_timeout=float(env.get("AITP_FETCH_TIMEOUT") or cls.fetch_timeout),
            webhook_allow=_prefixes(env.get("AITP_WEBHOOK_ALLOW")),
            webhook_deny=_prefixes(env.get("AITP_WEBHOOK_DENY")),
            webhook_timeout=float(env.get("AITP_WEBHOOK_TIMEOUT") or cls.webhook_timeout),
            webhook_retry_hours=float(env.get("AITP_WEBHOOK_RETRY_HOURS") or cls.webhook_retry_hours),
            webhook_retry_base=float(env.get("AITP_WEBHOOK_RETRY_BASE") or cls.webhook_retry_base),
            webhook_disable_days=float(env.get("AITP_WEBHOOK_DISABLE_DAYS") or cls.webhook_disable_days),
            webhook_secret_grace_hours=float(
                env.get("AITP_WEBHOOK_SECRET_GRACE_HOURS") or cls.webhook_secret_grace_hours
            ),
            webhook_lease_seconds=float(env.get("AITP_WEBHOOK_LEASE_SECONDS") or cls.webhook_lease_seconds),
            webhook_retention_days=float(env.get("AITP_WEBHOOK_RETENTION_DAYS") or cls.webhook_retention_days),
            a2a_wait_seconds=float(env.get("AITP_A2A_WAIT_SECONDS") or cls.a2a_wait_seconds),
            a2a_root_agent=env.get("AITP_A2A_ROOT_AGENT") or None,
            a2a_card_max_bytes=int(
                _number(
                    "AITP_A2A_CARD_MAX_BYTES",
                    env.get("AITP_A2A_CARD_MAX_BYTES") or cls.a2a_card_max_bytes,
                    0,
                    1 << 30,
                    low_allowed=False,
                )
            ),
            a2a_reply_max_bytes=int(
                _number(
                    "AITP_A2A_REPLY_MAX_BYTES",
                    env.get("AITP_A2A_REPLY_MAX_BYTES") or cls.a2a_reply_max_bytes,
                    0,
                    1 << 30,
                    low_allowed=True,
                )
            ),
            contact_policy=_choice("AITP_CONTACT_POLICY", env.get("AITP_CONTACT_POLICY") or cls.contact_policy),
            new_threads_per_hour=int(env.get("AITP_NEW_THREADS_PER_HOUR") or cls.new_threads_per_hour),
            turn_budget=int(
                _number("AITP_TURN_BUDGET", env.get("AITP_TURN_BUDGET") or cls.turn_budget, 0, 1e6, low_allowed=True)
            ),
            agent_messages_per_minute=_number(
                "AITP_AGENT_MESSAGES_PER_MINUTE",
                env.get("AITP_AGENT_MESSAGES_PER_MINUTE") or cls.agent_messages_per_minute,
                0,
                1e6,
                low_allowed=True,
            ),
            agent_burst=int(
                _number("AITP_AGENT_BURST", env.get("AITP_AGENT_BURST") or cls.agent_burst, 1, 1e6, low_allowed=True)
            ),
            sign_in_kinds=_kinds(env.get("AITP_SIGN_IN_KINDS"), cls.sign_in_kinds),
            sign_in_challenge_seconds=_number(
                "AITP_SIGN_IN_CHALLENGE_SECONDS",
                env.get("AITP_SIGN_IN_CHALLENGE_SECONDS") or cls.sign_in_challenge_seconds,
                0,
                3600,
                low_allowed=False,
            ),
            sign_in_token_hours=_number(
                "AITP_SIGN_IN_TOKEN_HOURS",
                env.get("AITP_SIGN_IN_TOKEN_HOURS") or cls.sign_in_token_hours,
                0,
                MAX_DAYS * 24,
                low_allowed=False,
            ),
            sign_in_attempts_per_minute=float(
                env.get("AITP_SIGN_IN_ATTEMPTS_PER_MINUTE") or cls.sign_in_attempts_per_minute
            ),
            sign_in_address_attempts_per_minute=float(
                env.get("AITP_SIGN_IN_ADDRESS_ATTEMPTS_PER_MINUTE") or cls.sign_in_address_attempts_per_minute
            ),
            public_url=(env.get("AITP_PUBLIC_URL") or "").rstrip("/") or None,
            identity_allow=_prefixes(env.get("AITP_IDENTITY_ALLOW")),
            identity_max_bytes=int(env.get("AITP_IDENTITY_MAX_BYTES") or cls.identity_max_bytes),
            identity_timeout=float(env.get("AITP_IDENTITY_TIMEOUT") or cls.identity_timeout),
            near_rpc_url=env.get("AITP_NEAR_RPC_URL") or cls.near_rpc_url,
            strict_roles=_flag("AITP_STRICT_ROLES", env.get("AITP_STRICT_ROLES")),
            sign_in_code_failures_per_minute=_number(
                "AITP_SIGN_IN_CODE_FAILURES_PER_MINUTE",
                env.get("AITP_SIGN_IN_CODE_FAILURES_PER_MINUTE") or cls.sign_in_code_failures_per_minute,
                0,
                1e6,
                low_allowed=True,
            ),
        )

    def with_overrides(self, **changes: Any) -> Settings:
        """A copy with the given fields replaced, ignoring those left as None."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


def _prefixes(value: str | None) -> tuple[str, ...]:
    """A comma-separated list of URL prefixes."""
    return tuple(p.strip() for p in (value or "").split(",") if p.strip())


def _number(name: str, value: str | float, low: float, high: float, *, low_allowed: bool) -> float:
    """A finite number in (low, high], or [low, high] when `low_allowed` (NaN and infinities are refused:
    a lifetime of inf made every sign-in fail on the key's expiry)."""
    number = float(value)
    if not (math.isfinite(number) and (number >= low if low_allowed else number > low) and number <= high):
        bounds = f"{'at least' if low_allowed else 'more than'} {low:g} and at most {high:g}"
        raise ValueError(f"{name} must be a number {bounds}, not {value!r}")
    return number


SIGN_IN_KINDS = ("domain", "near")


def _choice(name: str, value: str) -> str:
    """A default contact policy (an allow list starts empty: the new actor fills it)."""
    if value not in CONTACT_POLICIES:
        raise ValueError(f"{name} must be one of {', '.join(CONTACT_POLICIES)}, not {value!r}")
    return value


def _kinds(value: str | None, default: tuple[str, ...]) -> tuple[str, ...]:
    """AITP_SIGN_IN_KINDS: a comma-separated list of domain and near, or "none"."""
    if value is None or not value.strip():
        return default
    kinds = tuple(k.strip() for k in value.split(",") if k.strip() and k.strip() != "none")
    unknown = [k for k in kinds if k not in SIGN_IN_KINDS]
    if unknown:
        raise ValueError(f"AITP_SIGN_IN_KINDS may list domain and near (or be none), not {unknown[0]!r}")
    return kinds


def _unknown_policy(value: str) -> Literal["reject", "accept"]:
    if value not in ("reject", "accept"):
        raise ValueError(f"AITP_UNKNOWN_CAPABILITIES must be 'reject' or 'accept', not {value!r}")
    return "accept" if value == "accept" else "reject"


def _flag(name: str, value: str | None) -> bool:
    """An on/off setting: 1/true/yes/on or 0/false/no/off (unset or empty: off); anything else is refused, so a
    misspelt "ture" cannot leave a deployment silently lax."""
    word = (value or "").strip().lower()
    if word in ("1", "true", "yes", "on"):
        return True
    if word in ("", "0", "false", "no", "off"):
        return False
    raise ValueError(f"{name} must be true or false, not {value!r}")
