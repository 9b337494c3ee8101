""" "New conversation" takes only actors the server knows (issue 31, item 5): each id is looked up as it is entered
(GET /v1/actors/{id}), an unknown one is named at the field ("No one with the id '<x>' is known here.", its
description, the field marked invalid), Start conversation refuses it and creates nothing, and a refusal of the
server (400 `unknown_actor`) is shown at the field too. At desktop (1280x800) and phone (390x844, touch) sizes."""

from __future__ import annotations

import itertools
import json
import re

import pytest
from playwright.sync_api import Locator, Page, Route, expect

from tests.web.axe import assert_accessible
from tests.web.conftest import SIZES, WebServer
from tests.web.test_customer import Shop

WHO = "Who do you want to talk to?"
NOT_ON_SERVICE = "No one with that account name is on this service"
_ghosts = itertools.count(1)


@pytest.fixture
def shop(web_server: WebServer) -> Shop:
    return Shop(web_server)


def new_conversation(page: Page, shop: Shop) -> Locator:
    shop.open(page)
    page.get_by_text("New conversation").click()
    return page.get_by_role("form", name="New conversation")


def unknown(actor: str) -> str:
    return f"No one with the id '{actor}' is known here."


def threads_of(shop: Shop) -> list[str]:
    return [thread["id"] for thread in shop.customer_api.get("/threads").json()["data"]]


@SIZES
def test_an_unknown_id_is_named_at_the_field_and_refused(sized: Page, shop: Shop, size: dict[str, int]) -> None:
    ghost = f"ghost-{next(_ghosts)}.near"
    before = threads_of(shop)
    form = new_conversation(sized, shop)
    field = form.get_by_label(WHO)

    field.fill(ghost)
    field.press("Tab")  # leaving the field checks what it holds

    problem = form.locator(".alert", has_text="No one with the id")
    expect(problem).to_have_text(unknown(ghost))
    expect(problem).to_be_visible()
    expect(field).to_have_attribute("aria-invalid", "true")
    expect(field).to_have_accessible_description(re.compile(re.escape(unknown(ghost))))

    form.get_by_role("button", name="Start conversation").click()

    expect(form.get_by_role("alert")).to_contain_text(NOT_ON_SERVICE)
    expect(field).to_be_focused()
    expect(form).to_be_visible()  # still open, nothing started
    assert_accessible(sized, "the New conversation form refusing an unknown id")
    assert threads_of(shop) == before
    assert shop.customer_api.get(f"/actors/{ghost}").status_code == 404

    # checked as it is typed: of several ids, the unknown one is named
    field.fill(f"{shop.id}, {ghost}")
    expect(problem).to_have_text(unknown(ghost))
    field.fill(shop.id)
    expect(problem).to_be_hidden()
    expect(field).not_to_have_attribute("aria-invalid", "true")

    form.get_by_role("button", name="Start conversation").click()

    expect(sized.locator("#thread-title")).to_have_text("Headphone Shop")
    [created] = [thread for thread in threads_of(shop) if thread not in before]
    assert shop.api.get(f"/threads/{created}").status_code == 200  # with the shop


@SIZES
def test_the_servers_refusal_of_an_unknown_actor_is_shown_at_the_field(
    sized: Page, shop: Shop, size: dict[str, int]
) -> None:
    ghost = f"ghost-{next(_ghosts)}.near"
    before = threads_of(shop)

    # the look-up says it exists (as if it were deleted between the look-up and Start): the server decides
    def pretend_known(route: Route) -> None:
        body = {"object": "actor.identity", "id": ghost, "kind": "local", "verified": False}
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    sized.route(f"**/v1/actors/{ghost}", pretend_known)
    form = new_conversation(sized, shop)
    field = form.get_by_label(WHO)
    field.fill(ghost)
    field.press("Tab")
    sized.wait_for_timeout(300)
    expect(form.locator(".alert", has_text="No one with the id")).to_be_hidden()

    form.get_by_role("button", name="Start conversation").click()

    alert = form.get_by_role("alert")
    expect(alert).to_contain_text(NOT_ON_SERVICE)  # the server's refusal, in words
    expect(form.locator(".alert", has_text="No one with the id")).to_have_text(unknown(ghost))  # and at the field
    expect(field).to_have_attribute("aria-invalid", "true")
    expect(field).to_be_focused()
    alert.locator("summary", has_text="Details").click()
    expect(alert).to_contain_text("unknown_actor")
    assert threads_of(shop) == before
