"""Actor profiles: what an actor says about itself (display name, avatar, description, accent colour), set by
the actor (or an admin) and read by itself and by the members of the threads it is in."""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from aitp.errors import Conflict, InvalidRequest, NotFound
from aitp.identity.names import name_key
from aitp.principals import Principal
from aitp.runtime import Runtime, now
from aitp.services import identities
from aitp.services.access import own_or_admin, readable_thread
from aitp.store.identities import IdentityRecord
from aitp.store.profiles import ProfileRecord

# a profile with what the server knows of its actor (None: an actor unknown to this server, e.g. one only an
# admin named before identities existed): every face shows the two together
Shown = tuple[ProfileRecord, IdentityRecord | None]

MAX_NAME = 80
MAX_DESCRIPTION = 500
MAX_AVATAR_URL = 2048
MAX_AVATAR_BYTES = 48 * 1024  # a data: avatar, decoded: a thumbnail, not a photo library
# raster images only (an SVG can carry script), each recognised by its first bytes
_IMAGE_MAGIC = {
    "png": (b"\x89PNG\r\n\x1a\n",),
    "jpeg": (b"\xff\xd8\xff",),
    "gif": (b"GIF87a", b"GIF89a"),
    "webp": (b"RIFF",),
}
_DATA_URL = re.compile(r"data:image/(png|jpeg|gif|webp);base64,([A-Za-z0-9+/=]+)")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_COLOR = re.compile(r"#[0-9A-Fa-f]{6}")


def empty(actor: str) -> ProfileRecord:
    """The profile of an actor that has not set one."""
    return ProfileRecord(actor=actor, display_name=None, avatar_url=None, description=None, updated_at=0)


async def own_profile(rt: Runtime, principal: Principal) -> Shown:
    profile = await rt.store.profiles.get(principal.actor) or empty(principal.actor)
    return profile, await rt.store.identities.get(principal.actor)


@dataclass(frozen=True)
class ActorSeen:
    """An actor as a caller may see it: its identity, its profile where the caller may see that
    (`identities.shows_profile`), and whether its contact policy is the caller's to see."""

    identity: IdentityRecord
    profile: Shown | None
    shows_policy: bool


async def actor_seen(rt: Runtime, principal: Principal, actor: str) -> ActorSeen:
    """`GET /v1/actors/{id}`: 404 `actor_not_found` for an actor this server does not know."""
    identity = await identities.identity_of(rt, actor)
    profile = None
    if identities.shows_profile(principal, identity):
        profile = (await rt.store.profiles.get(actor) or empty(actor), identity)
    return ActorSeen(identity, profile, identities.shows_policy(principal, identity))


async def visible_profile(rt: Runtime, principal: Principal, actor: str) -> Shown:
    """Another actor's profile, where the caller may see it without a shared thread: a verified actor's is
    public, anyone's to itself and to admins (404 otherwise, as for an unknown actor: local actors' profiles
    are seen through the threads one shares with them)."""
    identity = await rt.store.identities.get(actor)
    if identity is None or not identities.shows_profile(principal, identity):
        raise NotFound(f"No actor '{actor}' with a profile this key may see.", param="actor_id", code="actor_not_found")
    profile = await rt.store.profiles.get(actor) or empty(actor)
    return profile, identity


async def shown(rt: Runtime, actors: list[str]) -> list[Shown]:
    """The profile and identity of each of `actors`, in order (two reads)."""
    found = await rt.store.profiles.many(actors)
    known = await rt.store.identities.many(actors)
    return [(found.get(actor) or empty(actor), known.get(actor)) for actor in actors]


async def put_profile(
    rt: Runtime,
    principal: Principal,
    actor: str,
    *,
    display_name: str | None,
    avatar_url: str | None,
    description: str | None,
    accent_color: str | None,
) -> Shown:
    """Replace `actor`'s profile: only the actor itself, or an admin, may. A display name that reads as the
    name of another, verified actor is refused (409 `display_name_taken`): names of verified actors cannot be
    borrowed (`aitp.identity.names`: case, spacing, punctuation and Unicode look-alikes)."""
    identities.refuse_customer(
        principal, "set a profile: the shop sets the customer's name", code="customer_profile_read_only"
    )
    own_or_admin(principal, actor, "set its profile")
    record = ProfileRecord(
        actor=actor,
        display_name=_text(display_name, MAX_NAME, "display_name", one_line=True),
        avatar_url=_avatar(avatar_url),
        description=_text(description, MAX_DESCRIPTION, "description", one_line=False),
        updated_at=now(),
        accent_color=_color(accent_color),
    )
    key = await _unborrowed(rt, actor, record.display_name)
    await identities.admit(rt, principal, actor)
    await rt.store.profiles.put(record)
    await rt.store.identities.set_name_key(actor, key)
    return record, await rt.store.identities.get(actor)


async def checked_name(rt: Runtime, actor: str, display_name: str | None) -> str | None:
    """`display_name` as `actor`'s profile would keep it (trimmed, None when blank): 400 when too long or not
    one line, 409 `display_name_taken` when it reads as another, verified actor's name."""
    name = _text(display_name, MAX_NAME, "display_name", one_line=True)
    await _unborrowed(rt, actor, name)
    return name


async def set_name(rt: Runtime, actor: str, name: str) -> None:
    """Give the known actor `actor` the display name `name` (from `checked_name`), keeping the rest of its
    profile: a shop names its customer so."""
    old = await rt.store.profiles.get(actor) or empty(actor)
    await rt.store.profiles.put(replace(old, display_name=name, updated_at=now()))
    await rt.store.identities.set_name_key(actor, name_key(name))


async def _unborrowed(rt: Runtime, actor: str, display_name: str | None) -> str:
    """The comparison key of `actor`'s display name ("" for none); 409 `display_name_taken` when it reads as
    the name of another, verified actor."""
    key = name_key(display_name) if display_name else ""
    if key:
        holder = await rt.store.identities.verified_with_name(key, other_than=actor)
        if holder is not None:
            raise Conflict(
                f"'{display_name}' reads as the name of the verified actor '{holder}': choose another name.",
                param="display_name",
                code="display_name_taken",
            )
    return key


async def thread_profiles(rt: Runtime, principal: Principal, thread_id: str) -> list[Shown]:
    """The profile of each actor of the thread, in the thread's order (members and admins only: 404)."""
    view = await readable_thread(rt, principal, thread_id)
    return await shown(rt, [actor.id for actor in view.actors])


def _text(value: str | None, limit: int, param: str, *, one_line: bool) -> str | None:
    """`value` trimmed (None when blank), refused when too long or when it holds control characters."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    if len(value) > limit:
        raise InvalidRequest(f"'{param}' is longer than {limit} characters.", param=param, code="string_too_long")
    allowed = value if one_line else value.replace("\n", "").replace("\t", "")
    if _CONTROL.search(allowed):
        raise InvalidRequest(f"'{param}' must not contain control characters.", param=param)
    return value


def _color(value: str | None) -> str | None:
    """A brand colour as `#rrggbb` (either case, kept as written), or None when blank."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    if _COLOR.fullmatch(value) is None:
        raise InvalidRequest("'accent_color' must be a colour written #rrggbb, e.g. #1a7f5a.", param="accent_color")
    return value


def _avatar(url: str | None) -> str | None:
    """An http(s) URL, or a small base64 `data:` PNG, JPEG, GIF or WebP whose bytes are that image type."""
    if url is None or not url.strip():
        return None
    url = url.strip()
    if url.startswith("data:"):
        match = _DATA_URL.fullmatch(url)
        if match is None:
            raise InvalidRequest(
                "A data: avatar must be a base64 PNG, JPEG, GIF or WebP image (data:image/png;base64,...).",
                param="avatar_url",
            )
        if len(match.group(2)) > (MAX_AVATAR_BYTES * 4) // 3 + 4:
            raise InvalidRequest(
                f"A data: avatar must be at most {MAX_AVATAR_BYTES // 1024} KiB; link a larger image by URL.",
                param="avatar_url",
                code="string_too_long",
            )
        try:
            image = base64.b64decode(match.group(2), validate=True)
        except binascii.Error:
            raise InvalidRequest("The data: avatar is not valid base64.", param="avatar_url") from None
        if not image.startswith(_IMAGE_MAGIC[match.group(1)]):
            raise InvalidRequest(f"The data: avatar is not a {match.group(1).upper()} image.", param="avatar_url")
        return url
    if len(url) > MAX_AVATAR_URL:
        raise InvalidRequest(
            f"'avatar_url' is longer than {MAX_AVATAR_URL} characters.", param="avatar_url", code="string_too_long"
        )
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or _CONTROL.search(url):
        raise InvalidRequest("'avatar_url' must be an http(s) URL or a data:image URL.", param="avatar_url")
    return url
