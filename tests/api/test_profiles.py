"""Actor profiles through the API: an actor sets its display name, avatar and description; the members of its
threads read them; nobody else does. Sizes and avatar images are checked."""

from __future__ import annotations

import base64

from tests.conftest import API
from tests.test_wire_schemas import assert_valid

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def data_url(kind: str, payload: bytes) -> str:
    return f"data:image/{kind};base64,{base64.b64encode(payload).decode()}"


async def test_an_actor_sets_its_profile_and_reads_it_back(api: API) -> None:
    ada = await api.actor("ada.near")
    unset = (await ada.get("/actors/me/profile")).json()
    assert unset == {
        "object": "actor.profile",
        "actor": "ada.near",
        "display_name": None,
        "avatar_url": None,
        "description": None,
        "accent_color": None,
        "updated_at": 0,
        # an admin's key made ada.near a local actor: nothing but this server's admin vouches for it
        "verified": False,
        "verification": {"kind": "local", "identifier": "ada.near", "verified_at": None, "key_id": None},
    }

    put = await ada.put(
        "/actors/me/profile",
        json={"display_name": "  Ada Lovelace ", "avatar_url": data_url("png", PNG), "description": "Buys things"},
    )

    assert put.status_code == 200, put.text
    assert_valid("profile", put.json())
    mine = (await ada.get("/actors/me/profile")).json()
    assert mine == put.json()
    assert (mine["display_name"], mine["description"]) == ("Ada Lovelace", "Buys things")  # trimmed
    assert mine["updated_at"] > 0
    # a PUT is the whole record: what it leaves out is cleared
    cleared = (await ada.put("/actors/me/profile", json={"display_name": "Ada"})).json()
    assert (cleared["avatar_url"], cleared["description"]) == (None, None)


async def test_members_of_a_thread_read_its_actors_profiles_and_others_do_not(api: API) -> None:
    ada, shop, stranger = await api.actor("ada.near"), await api.actor("shop.near"), await api.actor("eve.near")
    await shop.put("/actors/me/profile", json={"display_name": "Headphone Shop", "avatar_url": "https://x.test/s.png"})
    thread = (await ada.post("/threads", json={"actors": [{"id": "shop.near"}]})).json()

    listed = await ada.get(f"/threads/{thread['id']}/profiles")

    assert listed.status_code == 200, listed.text
    assert_valid("profile-list", listed.json())
    names = {p["actor"]: p["display_name"] for p in listed.json()["data"]}
    assert names == {"ada.near": None, "shop.near": "Headphone Shop"}
    assert (await stranger.get(f"/threads/{thread['id']}/profiles")).status_code == 404


async def test_only_the_actor_or_an_admin_sets_a_profile(api: API) -> None:
    eve = await api.actor("eve.near")

    refused = await eve.put("/actors/ada.near/profile", json={"display_name": "Not Ada"})
    by_admin = await api.admin.put("/actors/ada.near/profile", json={"display_name": "Ada"})

    assert refused.status_code == 403, refused.text
    assert by_admin.status_code == 200, by_admin.text
    ada = await api.actor("ada.near")
    assert (await ada.get("/actors/me/profile")).json()["display_name"] == "Ada"


async def test_profile_fields_are_bounded_and_avatars_are_images(api: API) -> None:
    ada = await api.actor("ada.near")
    refusals = {
        "display_name": {"display_name": "x" * 81},
        "description": {"description": "x" * 501},
        "avatar_url": {"avatar_url": "javascript:alert(1)"},
    }
    for param, body in refusals.items():
        response = await ada.put("/actors/me/profile", json=body)
        assert response.status_code == 400, (body, response.text)
        assert response.json()["error"]["param"] == param

    for avatar in (
        "data:image/svg+xml;base64,PHN2Zy8+",  # SVG can script: not accepted
        data_url("png", b"GIF89a not a png"),  # says PNG, is not one
        data_url("png", PNG + b"\x00" * 50_000),  # over 48 KiB
        "data:image/png;base64,***",
        "/relative.png",
    ):
        response = await ada.put("/actors/me/profile", json={"avatar_url": avatar})
        assert response.status_code == 400, (avatar[:40], response.text)
        assert response.json()["error"]["param"] == "avatar_url"

    control = await ada.put("/actors/me/profile", json={"display_name": "Ada\u0000"})
    assert control.status_code == 400 and control.json()["error"]["param"] == "display_name"
    gif = await ada.put("/actors/me/profile", json={"avatar_url": data_url("gif", b"GIF89a....")})
    assert gif.status_code == 200, gif.text
