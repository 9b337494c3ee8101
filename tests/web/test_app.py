"""The chat UI's shell in a real browser: sign-in, the live thread list, threads, actors, the capability
table (behind "Developer details"), posting, resuming the inbox after a network drop, keyboard-only use and
a phone's separate screens.

Every message or actor the UI creates is checked through the HTTP API as well.
"""

from __future__ import annotations

import itertools
import json
import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from aitp.testing import start_server
from tests.conftest import ADMIN_KEY
from tests.web.conftest import WebServer

DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
DATA_REQUEST = "https://aitp.dev/capabilities/aitp-03-data-request/v1.0.0/schema.json"
_names = itertools.count(1)


def unique(actor: str) -> str:
    """Actor ids unique within the module's server, so tests do not see each other's threads."""
    return f"{actor}-{next(_names)}.near"


def open_ui(page: Page, web_server: WebServer, key: str, thread: str | None = None) -> None:
    page.goto(web_server.url(key, thread))
    expect(page.locator("#connection")).to_have_attribute("data-state", "live")
    if thread is not None:
        # opened: the UI then moves focus to the thread's heading, which would take keys typed before
        expect(page.locator("#thread-title")).to_be_focused()


def messages_of(agent: httpx.Client, thread_id: str) -> list[dict]:
    response = agent.get(f"/threads/{thread_id}/messages", params={"order": "asc", "limit": 100})
    assert response.status_code == 200, response.text
    return response.json()["data"]


def texts_of(agent: httpx.Client, thread_id: str) -> list[tuple[str, str]]:
    """(author, text) of every message of the thread, oldest first."""
    return [(m["metadata"]["actor"], m["content"][0]["text"]["value"]) for m in messages_of(agent, thread_id)]


def create_thread(agent: httpx.Client, **body: object) -> dict:
    response = agent.post("/threads", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def message_article(page: Page, text: str):
    return page.locator("article.message", has_text=text)


# ------------------------------------------------------------------------------------------- sign-in


def test_signing_in_with_the_form_lists_my_threads_and_says_who_i_am(page: Page, web_server: WebServer) -> None:
    alice, shop, bank = unique("alice"), unique("shop"), unique("bank")
    key = web_server.key_for(alice)
    create_thread(web_server.agent(shop), actors=[{"id": alice}], metadata={"title": "Winter socks"})
    create_thread(web_server.agent(bank), actors=[{"id": alice}], metadata={"title": "Savings"})

    page.goto(web_server.base_url)
    page.get_by_label("Access key").fill(key)
    page.get_by_role("button", name="Sign in").click()

    expect(page.locator("#connection")).to_have_attribute("data-state", "live")
    expect(page.locator("#whoami")).to_have_text(alice)  # the one actor both threads share
    expect(page.locator("#thread-list li")).to_have_count(2)
    expect(page.get_by_role("link", name=re.compile("Winter socks"))).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('aitp.key')") == key


def test_a_bad_key_in_the_form_shows_the_servers_error(page: Page, web_server: WebServer) -> None:
    page.goto(web_server.base_url)
    page.get_by_label("Access key").fill("aitp_not_a_key")
    page.get_by_role("button", name="Sign in").click()

    expect(page.locator("#sign-in-error")).to_have_attribute("role", "alert")
    expect(page.locator("#sign-in-error .sentence")).to_have_text(
        "That access key isn't valid. Check it, or ask for a new sign-in link."
    )
    page.locator("#sign-in-error summary").click()  # the server's own words, for developers
    expect(page.locator("#sign-in-error code")).to_contain_text("Incorrect API key provided.")
    expect(page.locator("#workspace")).to_be_hidden()
    assert page.evaluate("sessionStorage.getItem('aitp.key')") is None


def test_the_sign_in_link_signs_in_opens_the_thread_and_leaves_the_address_bar(
    page: Page, web_server: WebServer
) -> None:
    alice, shop = unique("alice"), unique("shop")
    key = web_server.key_for(alice)
    thread = create_thread(web_server.agent(shop), actors=[{"id": alice}], messages=["Which size?"])

    open_ui(page, web_server, key, thread["id"])

    expect(message_article(page, "Which size?")).to_have_attribute("data-actor", shop)
    assert "code=" not in page.url
    assert page.url.endswith(f"#thread={thread['id']}")
    # the key lives in this tab's sessionStorage: a reload stays signed in, on the same thread
    page.reload()
    expect(page.locator("#connection")).to_have_attribute("data-state", "live")
    expect(message_article(page, "Which size?")).to_be_visible()


def test_a_used_sign_in_link_shows_why_and_the_sign_in_form(page: Page, web_server: WebServer) -> None:
    link = web_server.url(web_server.key_for(unique("alice")))
    page.goto(link)
    expect(page.locator("#connection")).to_have_attribute("data-state", "live")
    page.evaluate("sessionStorage.clear()")

    page.goto(web_server.base_url + "/health")
    page.goto(link)  # the same code again: it worked once

    expect(page.locator("#sign-in-error .sentence")).to_have_text(
        "This sign-in link has expired or was already used. Ask for a new one."
    )
    expect(page.get_by_label("Access key")).to_be_focused()
    assert "code=" not in page.url


def test_when_the_links_key_expires_the_sign_in_form_says_so(page: Page, tmp_path: Path) -> None:
    # a server of its own whose sign-in links make keys that live 3 seconds (AITP_SIGN_IN_KEY_DAYS)
    env = {"AITP_ADMIN_KEY": ADMIN_KEY, "AITP_SIGN_IN_KEY_DAYS": str(3.5 / 86_400)}
    server = start_server(f"sqlite:///{tmp_path / 'expiry.db'}", tmp_path / "serve.log", env)
    try:
        web = WebServer(server)
        open_ui(page, web, web.key_for(unique("alice")))

        expect(page.locator("#sign-in-error .sentence")).to_have_text(
            "Your sign-in has expired. Sign in again.", timeout=20_000
        )
        expect(page.locator("#workspace")).to_be_hidden()
        expect(page.get_by_label("Access key")).to_be_focused()
        assert page.evaluate("sessionStorage.getItem('aitp.key')") is None
    finally:
        server.stop()


def test_an_old_link_with_a_key_is_not_used_and_leaves_the_address_bar(page: Page, web_server: WebServer) -> None:
    key = web_server.key_for(unique("alice"))
    page.goto(f"{web_server.base_url}/#key={key}")

    expect(page.locator("#sign-in-error")).to_contain_text("This link is out of date.")
    assert "key=" not in page.url
    assert page.evaluate("sessionStorage.getItem('aitp.key')") is None


def test_signing_out_forgets_the_key(page: Page, web_server: WebServer) -> None:
    open_ui(page, web_server, web_server.key_for(unique("alice")))

    page.get_by_role("button", name="Sign out").click()

    expect(page.get_by_label("Access key")).to_be_visible()
    expect(page.locator("#connection")).to_have_attribute("data-state", "idle")
    assert page.evaluate("sessionStorage.getItem('aitp.key')") is None


def test_opening_my_only_thread_tells_me_which_of_its_actors_i_am(page: Page, web_server: WebServer) -> None:
    # one thread of two actors cannot say which one the key is: the UI asks the server, storing nothing
    alice, shop = unique("alice"), unique("shop")
    web_server.known(alice)
    shop_agent = web_server.agent(shop)
    thread = create_thread(shop_agent, actors=[{"id": alice}], messages=["Hi"])

    open_ui(page, web_server, web_server.key_for(alice), thread["id"])

    expect(page.locator("#whoami")).to_have_text(alice)
    expect(page.locator(f'#details li.actor[data-actor="{alice}"] .badge')).to_have_text("you")
    assert texts_of(shop_agent, thread["id"]) == [(shop, "Hi")]


# ---------------------------------------------------------------------------------- threads, live


def test_the_thread_list_shows_a_thread_an_agent_creates_with_me_live(page: Page, web_server: WebServer) -> None:
    alice, shop = unique("alice"), unique("shop")
    open_ui(page, web_server, web_server.key_for(alice))
    expect(page.locator("#thread-list li")).to_have_count(0)
    page.evaluate("window.__sameDocument = true")

    thread = create_thread(web_server.agent(shop), actors=[{"id": alice}], metadata={"title": "Fresh offer"})

    item = page.locator(f'#thread-list li[data-thread-id="{thread["id"]}"]')
    expect(item).to_contain_text("Fresh offer")
    item.get_by_role("link").click()
    expect(page.locator("#thread-title")).to_have_text("Fresh offer")
    assert page.evaluate("window.__sameDocument") is True


def test_creating_a_thread_and_posting_text_from_the_ui(page: Page, web_server: WebServer) -> None:
    alice, shop = unique("alice"), unique("shop")
    shop_agent = web_server.agent(shop)
    open_ui(page, web_server, web_server.key_for(alice))

    page.get_by_text("New conversation").click()
    form = page.get_by_role("form", name="New conversation")
    form.get_by_label("Who do you want to talk to?").fill(shop)
    form.get_by_label("Subject (optional)").fill("Socks")
    form.get_by_role("button", name="Start conversation").click()

    expect(page.locator("#thread-title")).to_have_text("Socks")
    thread_id = page.url.split("#thread=")[1]
    composer = page.get_by_label("Message", exact=True)
    expect(composer).to_be_focused()
    composer.fill("I need warm socks")
    composer.press("Enter")

    expect(message_article(page, "I need warm socks")).to_have_attribute("data-actor", alice)
    expect(composer).to_have_value("")
    assert texts_of(shop_agent, thread_id) == [(alice, "I need warm socks")]
    actors = {a["id"]: a for a in shop_agent.get(f"/threads/{thread_id}/actors").json()["data"]}
    assert actors[alice]["role"] == "user"
    assert actors[shop]["role"] == "assistant"
    # the UI declares for me every capability it renders (all of the registry's, by default)
    assert {"schema": DECISIONS} in actors[alice]["capabilities"]
    # learnt from the thread it just created
    expect(page.locator("#whoami")).to_have_text(alice)


def a_thread_of_my_own(page: Page, web_server: WebServer) -> tuple[str, httpx.Client, dict]:
    """A new actor, an HTTP client acting as it and a thread it is alone in, open in the UI."""
    alice = unique("alice")
    agent = web_server.agent(alice)
    thread = create_thread(agent)
    open_ui(page, web_server, web_server.key_for(alice), thread["id"])
    return alice, agent, thread


def test_shift_enter_starts_a_new_line_and_enter_sends(page: Page, web_server: WebServer) -> None:
    alice, agent, thread = a_thread_of_my_own(page, web_server)

    composer = page.get_by_label("Message", exact=True)
    composer.click()
    composer.type("first line")
    composer.press("Shift+Enter")
    composer.type("second line")
    composer.press("Enter")

    expect(message_article(page, "second line")).to_be_visible()
    assert texts_of(agent, thread["id"]) == [(alice, "first line\nsecond line")]


def test_typing_while_a_thread_loads_keeps_the_focus_and_the_text(page: Page, web_server: WebServer) -> None:
    alice, shop = unique("alice"), unique("shop")
    web_server.known(alice)
    thread = create_thread(web_server.agent(shop), actors=[{"id": alice}], messages=["Which size?"])
    open_ui(page, web_server, web_server.key_for(alice))
    held: list = []
    slow = f"**/v1/threads/{thread['id']}/capabilities"  # one of the reads that opening the thread waits for
    page.route(slow, lambda route: held.append(route))  # a slow network

    page.get_by_role("link", name=re.compile("Which size")).click()
    composer = page.get_by_label("Message", exact=True)
    composer.click()
    composer.type("Size 42")
    assert held, "the thread was opened before the text was typed"
    for route in held:
        route.continue_()
    page.unroute(slow)

    expect(message_article(page, "Which size?")).to_be_visible()
    expect(composer).to_be_focused()
    expect(composer).to_have_value("Size 42")


def test_a_refused_message_shows_the_servers_error(page: Page, web_server: WebServer) -> None:
    _, agent, thread = a_thread_of_my_own(page, web_server)

    composer = page.get_by_label("Message", exact=True)
    composer.fill('{"$schema": "https://aitp.dev/capabilities/no-such-thing/v1.0.0/schema.json"}')
    composer.press("Enter")

    alert = page.locator("#composer [role=alert]")
    expect(alert).to_be_visible()
    refused = agent.post(f"/threads/{thread['id']}/messages", json={"content": composer.input_value()})
    assert refused.status_code == 422
    # a sentence for the customer; the code, param and the server's message for developers, folded
    expect(alert.locator(".sentence")).to_have_text(
        "The service doesn't know this kind of message, so it was not sent."
    )
    expect(alert.locator("code")).to_be_hidden()
    alert.get_by_text("Details").click()
    error = refused.json()["error"]
    expect(alert.locator("code")).to_have_text(
        f"HTTP 422 · code {error['code']} · param {error['param']} · {error['message']}"
    )
    assert messages_of(agent, thread["id"]) == []


def test_adding_an_actor_updates_the_side_panel_and_the_capability_table(page: Page, web_server: WebServer) -> None:
    alice, shop = unique("alice"), unique("shop")
    web_server.known(shop)
    agent = web_server.agent(alice)
    thread = create_thread(agent, actors=[{"id": alice, "capabilities": [DECISIONS, DATA_REQUEST]}])
    open_ui(page, web_server, web_server.key_for(alice), thread["id"])
    table = page.locator("#details .negotiated-list")
    expect(table).to_be_hidden()  # the protocol view is for developers: folded
    page.get_by_text("Developer details").click()
    expect(table.locator('li[data-capability="aitp-03-data-request"] .version')).to_have_text("v1.0.0")

    page.locator("#details .add-actor-disclosure summary").click()
    form = page.get_by_role("form", name="Add an actor")
    form.get_by_label("Actor id").fill(shop)
    form.get_by_label(re.compile("AITP-02")).check()
    form.get_by_role("button", name="Add actor").click()

    expect(page.locator(f'#details li.actor[data-actor="{shop}"]')).to_contain_text("aitp-02-decisions v1.0.0")
    added = {a["id"]: a for a in agent.get(f"/threads/{thread['id']}/actors").json()["data"]}
    assert added[shop]["capabilities"] == [{"schema": DECISIONS}]
    decisions = table.locator('li[data-capability="aitp-02-decisions"]')
    expect(decisions.locator(".version")).to_have_text("v1.0.0")
    expect(decisions.locator(".supported")).to_have_text(f"{alice}, {shop}")
    # the shop cannot read data requests, so no version of them is negotiated any more
    data_request = table.locator('li[data-capability="aitp-03-data-request"]')
    expect(data_request.locator(".version")).to_have_text("none")
    expect(data_request.locator(".unsupported")).to_have_text(shop)
    negotiated = {c["id"]: c for c in agent.get(f"/threads/{thread['id']}/capabilities").json()["data"]}
    assert negotiated["aitp-03-data-request"]["unsupported_by"] == [shop]


def test_the_side_panel_follows_actors_another_member_adds(page: Page, web_server: WebServer) -> None:
    alice, shop, courier = unique("alice"), unique("shop"), unique("courier")
    web_server.known(alice, courier)
    shop_agent = web_server.agent(shop)
    thread = create_thread(shop_agent, actors=[{"id": alice, "capabilities": [DECISIONS]}])
    open_ui(page, web_server, web_server.key_for(alice), thread["id"])
    page.get_by_text("Developer details").click()
    table = page.locator("#details .negotiated-list")
    expect(table.locator('li[data-capability="aitp-02-decisions"] .unsupported')).to_have_text(shop)

    response = shop_agent.post(f"/threads/{thread['id']}/actors", json={"id": courier, "capabilities": [DECISIONS]})
    assert response.status_code == 200, response.text

    expect(page.locator(f'#details li.person[data-actor="{courier}"]')).to_be_visible()
    expect(page.locator(f'#details li.actor[data-actor="{courier}"]')).to_be_visible()
    expect(table.locator('li[data-capability="aitp-02-decisions"] .supported')).to_have_text(f"{alice}, {courier}")


def test_a_message_another_actor_posts_appears_live(page: Page, web_server: WebServer) -> None:
    alice, shop = unique("alice"), unique("shop")
    web_server.known(alice)
    shop_agent = web_server.agent(shop)
    thread = create_thread(shop_agent, actors=[{"id": alice}])
    open_ui(page, web_server, web_server.key_for(alice), thread["id"])
    page.evaluate("window.__sameDocument = true")

    posted = shop_agent.post(f"/threads/{thread['id']}/messages", json={"content": "Blue or red?"})
    assert posted.status_code == 200, posted.text

    article = page.locator(f'article.message[data-message-id="{posted.json()["id"]}"]')
    expect(article).to_contain_text("Blue or red?")
    expect(article).to_have_attribute("data-actor", shop)
    assert page.evaluate("window.__sameDocument") is True


def test_a_capability_message_i_cannot_read_shows_as_a_refusal_line(page: Page, web_server: WebServer) -> None:
    alice, shop = unique("alice"), unique("shop")
    web_server.known(alice)
    shop_agent = web_server.agent(shop)
    thread = create_thread(shop_agent, actors=[{"id": shop, "capabilities": [DECISIONS]}, {"id": alice}])
    open_ui(page, web_server, web_server.key_for(alice), thread["id"])

    request = {"$schema": DECISIONS, "request_decision": {"id": "r1", "options": [{"id": "red", "name": "Red"}]}}
    refused = shop_agent.post(f"/threads/{thread['id']}/messages", json={"content": json.dumps(request)})
    assert refused.status_code == 422 and refused.json()["error"]["unsupported_by"] == [alice], refused.text

    line = page.locator(".system-line[data-event=refused]")
    expect(line.locator("span").first).to_have_text(
        f"{shop} sent a message that could not be delivered: you can't read that kind of message."
    )
    expect(line.locator("code")).to_have_text("request_decision · aitp-02-decisions 1.0.0")


def test_agents_that_used_their_turns_show_as_waiting_until_i_write(page: Page, web_server: WebServer) -> None:
    alice, shop, courier = unique("alice"), unique("shop"), unique("courier")
    me = web_server.agent(alice)
    agents = [web_server.agent(shop), web_server.agent(courier)]
    thread = create_thread(me, actors=[{"id": shop}, {"id": courier}])
    assert me.post(f"/threads/{thread['id']}", json={"turns": {"budget": 2}}).status_code == 200
    open_ui(page, web_server, web_server.key_for(alice), thread["id"])

    for agent in agents:
        assert agent.post(f"/threads/{thread['id']}/messages", json={"content": "Shall I go on?"}).status_code == 200
    line = page.locator(".system-line[data-event=paused]")
    expect(line).to_have_text(
        "The agents here sent 2 messages in a row, so they are waiting for a person. Write to let them go on."
    )
    refused = agents[0].post(f"/threads/{thread['id']}/messages", json={"content": "And on?"})
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "turn_budget_exhausted"

    page.reload()  # a thread opened while paused says so too
    expect(line).to_be_visible()
    composer = page.get_by_label("Message", exact=True)
    composer.fill("Yes, go on.")
    composer.press("Enter")
    expect(line).to_have_count(0)
    assert agents[0].post(f"/threads/{thread['id']}/messages", json={"content": "On we go"}).status_code == 200


def test_an_admin_link_posts_as_a_member_it_chooses(page: Page, web_server: WebServer) -> None:
    alice, shop = unique("alice"), unique("shop")
    web_server.known(alice)
    thread = create_thread(web_server.agent(shop), actors=[{"id": alice}])
    open_ui(page, web_server, ADMIN_KEY, thread["id"])
    expect(page.locator("#whoami")).to_have_text("admin")

    page.get_by_label("Post as").select_option(alice)
    composer = page.get_by_label("Message", exact=True)
    composer.fill("Written by the admin for alice")
    composer.press("Enter")

    expect(message_article(page, "Written by the admin")).to_have_attribute("data-actor", alice)
    assert texts_of(web_server.admin, thread["id"]) == [(alice, "Written by the admin for alice")]


# ------------------------------------------------------------------------------ network drop


class CuttableLink:
    """A TCP proxy in front of the server whose connections can be cut, as a dropped network would.

    While cut, open connections are reset and new ones refused; the browser sees its WebSocket die
    (close code 1006) and cannot reconnect until the link is restored."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.cut_off = threading.Event()
        self.connections: set[socket.socket] = set()
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.cut_off.is_set():
                client.close()
                continue
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            with self.lock:
                self.connections.update((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                self._drop(end)

    def _drop(self, end: socket.socket) -> None:
        with self.lock:
            self.connections.discard(end)
        try:
            end.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        end.close()

    def cut(self) -> None:
        self.cut_off.set()
        with self.lock:
            connections = list(self.connections)
        for end in connections:
            self._drop(end)

    def restore(self) -> None:
        self.cut_off.clear()

    def close(self) -> None:
        self.cut()
        self.listener.close()


@pytest.fixture
def link(web_server: WebServer) -> Iterator[CuttableLink]:
    proxy = CuttableLink(web_server.process.port)
    yield proxy
    proxy.close()


def test_after_a_network_drop_the_inbox_resumes_without_loss_duplicates_or_reload(
    page: Page, web_server: WebServer, link: CuttableLink
) -> None:
    alice, shop = unique("alice"), unique("shop")
    web_server.known(alice)
    shop_agent = web_server.agent(shop)
    thread = create_thread(shop_agent, actors=[{"id": alice}], messages=["Before the drop"])
    page.goto(web_server.url(web_server.key_for(alice), thread["id"], base_url=f"http://127.0.0.1:{link.port}"))
    status = page.locator("#connection")
    expect(status).to_have_attribute("data-state", "live")
    expect(message_article(page, "Before the drop")).to_be_visible()
    page.evaluate("window.__sameDocument = true")

    link.cut()
    expect(status).to_have_attribute("data-state", re.compile("offline|connecting"))
    posted = [
        shop_agent.post(f"/threads/{thread['id']}/messages", json={"content": f"While offline {n}"}).json()["id"]
        for n in (1, 2, 3)
    ]
    link.restore()

    expect(status).to_have_attribute("data-state", "live", timeout=20_000)
    for n, message_id in enumerate(posted, start=1):
        expect(page.locator(f'article.message[data-message-id="{message_id}"]')).to_have_count(1)
        expect(message_article(page, f"While offline {n}")).to_have_count(1)
    expect(page.locator("#messages article.message")).to_have_count(4)
    order = page.locator("#messages article.message").evaluate_all("els => els.map(e => e.dataset.messageId)")
    assert order[1:] == posted
    # what arrived while the connection was down is marked as new
    expect(page.locator(".new-divider")).to_have_count(1)
    assert page.locator(".new-divider").evaluate("node => node.nextElementSibling.dataset.messageId") == posted[0]
    assert page.evaluate("window.__sameDocument") is True
    assert page.evaluate("performance.getEntriesByType('navigation').length") == 1


def test_after_a_server_restart_the_inbox_resumes_from_its_cursor(page: Page, tmp_path: Path) -> None:
    # a server of its own: this one is stopped (WebSocket close 1012) and started again on the same port
    store = f"sqlite:///{tmp_path / 'restart.db'}"
    env = {"AITP_ADMIN_KEY": ADMIN_KEY, "AITP_CONTACT_POLICY": "anyone"}  # as the module's web_server
    server = start_server(store, tmp_path / "first.log", env)
    try:
        web = WebServer(server)
        alice, shop = unique("alice"), unique("shop")
        web.known(alice)
        shop_agent = web.agent(shop)
        thread = create_thread(shop_agent, actors=[{"id": alice}], messages=["Before the restart"])
        open_ui(page, web, web.key_for(alice), thread["id"])
        expect(message_article(page, "Before the restart")).to_be_visible()
        page.evaluate("window.__sameDocument = true")

        server.stop()
        expect(page.locator("#connection")).to_have_attribute("data-state", re.compile("offline|connecting"))
        server = start_server(store, tmp_path / "second.log", env, port=server.port)
        posted = [
            shop_agent.post(f"/threads/{thread['id']}/messages", json={"content": f"After {n}"}).json()["id"]
            for n in (1, 2, 3)
        ]

        expect(page.locator("#connection")).to_have_attribute("data-state", "live", timeout=20_000)
        for message_id in posted:
            expect(page.locator(f'article.message[data-message-id="{message_id}"]')).to_have_count(1)
        expect(page.locator("#messages article.message")).to_have_count(4)
        assert page.evaluate("window.__sameDocument") is True
    finally:
        server.stop()


# ------------------------------------------------------------------------- keyboard and layout


def test_signing_in_and_posting_with_the_keyboard_only(page: Page, web_server: WebServer) -> None:
    alice, shop = unique("alice"), unique("shop")
    web_server.known(alice)
    shop_agent = web_server.agent(shop)
    thread = create_thread(shop_agent, actors=[{"id": alice}], metadata={"title": "Keyboard"})
    key = web_server.key_for(alice)
    page.goto(web_server.base_url)

    expect(page.get_by_label("Access key")).to_be_focused()
    page.keyboard.type(key)
    page.keyboard.press("Enter")
    expect(page.locator("#connection")).to_have_attribute("data-state", "live")

    def tab_to(selector: str) -> None:
        for _ in range(40):
            page.keyboard.press("Tab")
            if page.evaluate("(s) => document.activeElement.matches(s)", selector):
                return
        pytest.fail(f"Tab never reached {selector}")

    tab_to(f'#thread-list li[data-thread-id="{thread["id"]}"] a')
    # the focused control shows a visible outline
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline == "solid"
    page.keyboard.press("Enter")
    expect(page.locator("#thread-title")).to_have_text("Keyboard")
    tab_to("#composer-text")
    page.keyboard.type("Typed without a mouse")
    page.keyboard.press("Enter")

    expect(message_article(page, "Typed without a mouse")).to_be_visible()
    assert texts_of(shop_agent, thread["id"]) == [(alice, "Typed without a mouse")]


def test_every_control_is_labelled_and_the_landmarks_exist(page: Page, web_server: WebServer) -> None:
    a_thread_of_my_own(page, web_server)
    page.get_by_text("New conversation").click()
    page.get_by_text("Developer options").click()
    page.get_by_text("Developer details").click()
    page.locator("#details .add-actor-disclosure summary").click()

    unlabelled = page.evaluate(
        """() => [...document.querySelectorAll('input, select, textarea, button')]
            .filter((el) => el.offsetParent !== null)
            .filter((el) => !(el.labels?.length || el.getAttribute('aria-label') || el.textContent.trim()))
            .map((el) => el.outerHTML)"""
    )
    assert unlabelled == []
    for role in ("banner", "navigation", "main", "complementary"):
        expect(page.get_by_role(role)).to_have_count(1)


def test_on_a_phone_the_list_and_the_conversation_are_separate_screens_with_a_pinned_composer(
    page: Page, web_server: WebServer
) -> None:
    alice, shop = unique("alice"), unique("shop")
    web_server.known(alice)
    shop_agent = web_server.agent(shop)
    thread = create_thread(
        shop_agent,
        actors=[{"id": alice, "capabilities": [DECISIONS, DATA_REQUEST]}],
        metadata={"title": "Phone"},
        messages=["A long line " + "without-any-break-" * 20, *[f"Message {n}" for n in range(30)]],
    )
    page.set_viewport_size({"width": 390, "height": 844})
    open_ui(page, web_server, web_server.key_for(alice))

    # first the list, alone
    expect(page.locator("#threads")).to_be_visible()
    expect(page.locator("#conversation")).to_be_hidden()
    page.get_by_role("link", name=re.compile("Phone")).click()

    # then the conversation, alone, its composer pinned to the bottom of the screen
    expect(page.locator("#threads")).to_be_hidden()
    expect(message_article(page, "Message 29")).to_be_in_viewport()
    composer = page.locator("#composer").bounding_box()
    assert composer is not None and 844 - 2 <= composer["y"] + composer["height"] <= 844 + 1
    page.locator("#scroller").evaluate("node => node.scrollTop = 0")
    composer_after = page.locator("#composer").bounding_box()
    assert composer_after == composer  # the messages scroll, the composer stays
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 390

    # the people and the protocol view on a screen of their own
    page.get_by_role("button", name="About").click()
    expect(page.locator("#details")).to_be_visible()
    expect(page.locator("#conversation")).to_be_hidden()
    page.get_by_role("button", name="Back to the conversation").click()
    expect(page.locator("#conversation")).to_be_visible()

    page.get_by_role("link", name="Conversations").click()
    expect(page.locator("#threads")).to_be_visible()
    expect(page.locator(f'#thread-list li[data-thread-id="{thread["id"]}"] a')).to_be_focused()


def test_a_thread_i_am_removed_from_leaves_my_list_and_the_open_view_says_so(page: Page, web_server: WebServer) -> None:
    alice, shop = unique("alice"), unique("shop")
    web_server.known(alice)
    shop_agent = web_server.agent(shop)
    kept = create_thread(shop_agent, actors=[{"id": alice}], metadata={"title": "Kept"})
    thread = create_thread(shop_agent, actors=[{"id": alice}], metadata={"title": "Closing"})
    open_ui(page, web_server, web_server.key_for(alice), thread["id"])
    expect(page.locator("#thread-title")).to_have_text("Closing")

    removed = shop_agent.delete(f"/threads/{thread['id']}/actors/{alice}")
    assert removed.status_code == 200, removed.text

    expect(page.locator("#thread-notice")).to_have_text("You were removed from this thread.")
    expect(page.locator(f'#thread-list li[data-thread-id="{thread["id"]}"]')).to_have_count(0)
    expect(page.locator(f'#thread-list li[data-thread-id="{kept["id"]}"]')).to_be_visible()
    expect(page.locator("#conversation")).to_have_attribute("data-state", "empty")
