/**
 * The chat a shop puts on its own website (web/embed.html, framed by web/embed.js): its customer, signed in on
 * the shop's site, talks with the shop. It opens straight on their conversation, in the shop's brand only: its
 * name, logo and colour in the header, no ids, no sign-in, no list of conversations, no developer panel.
 *
 * The key is a short-lived customer session the page around the frame gets from the shop's backend
 * (lib/parent-session.js); it is renewed through the page before it expires, or when a call is answered 401.
 * The conversation is the customer's most recent one with the shop, or a new one made at once: the shop's brand
 * comes from the conversation's profiles, and the shop's agent may greet first (one conversation per customer,
 * not per visit: the next visit opens it again). Same modules as the main app: messages, cards, forms, payments.
 */

import { createApi, listAll } from "./lib/api.js";
import { brandProperties } from "./lib/brand.js";
import { replaceChildren } from "./lib/dom.js";
import { Inbox } from "./lib/inbox.js";
import { ParentSession, SessionError } from "./lib/parent-session.js";
import { People } from "./lib/people.js";
import { Presence, presenceElements } from "./lib/presence.js";
import { showError } from "./lib/plain-words.js";
import { ThreadView } from "./lib/thread-view.js";

const $ = (selector) => document.querySelector(selector);
const FIRST_SESSION_MS = 15000; // how long the page around the frame may take to give the first key
const RECENT = 5; // of the customer's conversations with the shop, the newest read to find the latest activity

const SAY = {
  notFramed: "This chat opens on the shop's website.",
  noShop: "This chat is not set up: the page names no shop.",
  wrongShop: "This chat is not set up correctly. Try again later.",
  signIn: "Sign in on this website to chat with us.",
  noAnswer: "The chat could not be opened. Reload the page to try again.",
  broken: "The chat could not be opened. Try again in a moment.",
  lost: "The chat was disconnected. Reload the page to continue.",
};

/** The frame's `?shop=<id>`: the shop the page says it is (checked against the key's own shop). The server lets
 * only the sites that shop allows frame this page (its `embed_origins`): the page around is the shop's own. */
function shopOfQuery() {
  return new URLSearchParams(location.search).get("shop");
}

/** Show only a sentence (connecting, or why there is no chat). */
function showStatus(sentence, state) {
  document.body.dataset.state = state;
  const status = $("#embed-status");
  status.textContent = sentence;
  status.hidden = false;
  $(".embed-header").hidden = true;
  $("#conversation").hidden = true;
}

function showChat() {
  document.body.dataset.state = "open";
  $("#embed-status").hidden = true;
  $(".embed-header").hidden = false;
  $("#conversation").hidden = false;
}

/** The sentence for a session the shop's page did not give. */
function sessionSentence(error) {
  if (!(error instanceof SessionError)) return SAY.broken;
  if (error.status === null) return SAY.noAnswer;
  return error.status === 401 || error.status === 403 ? SAY.signIn : SAY.broken;
}

class EmbeddedChat {
  constructor(session, api, me, shop) {
    this.session = session;
    this.api = api;
    this.me = me;
    this.shop = shop;
    this.people = new People(api, { brandOnly: { shop, me: me.id } });
    this.view = new ThreadView(
      {
        main: $("#conversation"),
        log: $("#messages"),
        scroller: $("#scroller"),
        composer: $("#composer"),
        newMessages: $("#new-messages"),
      },
      {
        api,
        identity: { actor: me.id, admin: false },
        people: this.people,
        brandOnly: true,
        onClosed: (id, why) => this.closed(why),
      },
    );
    // under the shop's name: whether its agent is there and how soon it usually replies; "… is typing" above the
    // composer while it works on an answer
    this.presence = new Presence(presenceElements($(".shop-names"), $("#composer")), {
      api,
      name: (actor) => this.people.name(actor),
    });
    this.people.onChange((actors) => {
      if (actors.has(shop)) this.showBrand();
      if (this.view.thread) this.view.refreshPeople();
    });
    this.inbox = new Inbox({
      api,
      cursor: me.inbox_cursor,
      onEvent: (event) => this.onEvent(event),
      onActivity: (frame) => this.presence.handleEvent(frame), // outside the log: no cursor
      onStatus: (status) => this.onStatus(status),
    });
  }

  async start() {
    const id = (await this.latestThread()) ?? (await this.newThread());
    this.inbox.start();
    await this.view.open(id);
    this.presence.open(this.view.thread, this.me.id);
    this.showBrand();
    showChat();
  }

  /** The customer's conversation with the shop (or its agents) with the latest activity (of the few newest), or null. */
  async latestThread() {
    const ours = (id) => id === this.shop || id.startsWith(`${this.shop}/`);
    const threads = (await listAll(this.api, "/threads", { order: "desc" }))
      .filter((thread) => thread.actors.some((actor) => ours(actor.id)))
      .slice(0, RECENT);
    if (threads.length <= 1) return threads[0]?.id ?? null;
    const activity = await Promise.all(
      threads.map(async (thread) => {
        const page = await this.api("GET", `/threads/${encodeURIComponent(thread.id)}/messages?limit=1&order=desc`);
        return { id: thread.id, at: Math.max(thread.created_at, page.data[0]?.created_at ?? 0) };
      }),
    );
    activity.sort((a, b) => b.at - a.at);
    return activity[0].id;
  }

  /** A conversation with the shop, declaring every capability this chat draws (the shop declares its own). */
  async newThread() {
    const registry = await this.api("GET", "/capabilities");
    const mine = registry.data.filter((capability) => capability.latest).map((c) => c.schema_urls[c.latest]);
    const thread = await this.api("POST", "/threads", {
      actors: [{ id: this.me.id, capabilities: mine }, { id: this.shop }],
    });
    return thread.id;
  }

  /** The shop's name, logo and colour in the header (and the frame's title, and the page's, to say whose chat). */
  showBrand() {
    const name = this.people.name(this.shop);
    $("#shop-name").textContent = name;
    replaceChildren($("#shop-logo"), this.people.avatar(this.shop, "medium"));
    document.title = `Chat with ${name}`;
    const properties = brandProperties(this.people.profile(this.shop)?.accent_color);
    const root = document.documentElement;
    for (const property of ["--brand", "--brand-text", "--brand-hover", "--brand-ink-light", "--brand-ink-dark"]) {
      if (properties) root.style.setProperty(property, properties[property]);
      else root.style.removeProperty(property);
    }
    if (properties) root.dataset.brand = "";
    else delete root.dataset.brand;
    this.session.tell({ type: "aitp:title", title: `Chat with ${name}` });
  }

  onEvent(event) {
    if (event.type.startsWith("thread.actor.")) this.people.load(event.thread_id, true);
    this.view.handleEvent(event);
    if (this.view.thread && event.thread_id === this.view.id) this.presence.open(this.view.thread, this.me.id);
    this.presence.handleEvent(event);
  }

  onStatus({ state, detail, code }) {
    const connection = $("#connection");
    connection.dataset.state = state;
    // quiet while live: only trouble is worth words
    connection.textContent = state === "live" ? "" : detail;
    if (state === "live") {
      this.refused = false;
      for (const region of document.querySelectorAll('[role=alert][data-code="network_error"]')) showError(region, null);
      if (this.dropped) this.view.catchUp();
    }
    if (state === "offline") this.dropped = true;
    if (code === 4401) {
      // the key the socket was opened with ended (it expired: an older key than the one of the moment; or it was
      // revoked): connect again with the key of the moment, whose ticket call asks the page for a new key if it
      // is refused too. Refused again before being live: the page gives no key that works.
      if (this.refused) {
        this.closed(SAY.lost);
        return;
      }
      this.refused = true;
      this.inbox.start();
    }
  }

  closed(why) {
    showStatus(why, "failed");
    this.inbox.stop();
    this.presence.stop();
  }
}

async function boot() {
  const shop = shopOfQuery();
  if (!ParentSession.framed()) return showStatus(SAY.notFramed, "failed");
  if (!shop) return showStatus(SAY.noShop, "failed");
  const session = new ParentSession(shop);
  // a visitor who signed in: the conversation is the customer's now; open the chat again as the customer
  session.onUpgraded = () => location.reload();
  try {
    await session.start(FIRST_SESSION_MS);
  } catch (error) {
    if (error instanceof SessionError && error.anonymous && (error.status === 401 || error.status === 403)) {
      // not signed in on the shop's website, which lets visitors chat: a visitor's session, if the shop allows
      try {
        await session.visit(createApi(null));
        return openChat(session, shop);
      } catch (refused) {
        console.warn("No visitor's session", refused);
      }
    }
    showStatus(sessionSentence(error), "failed");
    // the page may still answer (a slow backend, the customer signing in): then the chat opens after all
    try {
      await session.next();
    } catch {
      return;
    }
    showStatus("Connecting…", "connecting");
  }
  return openChat(session, shop);
}

/** The chat, with the session's key of the moment. */
async function openChat(session, shop) {
  const api = createApi(() => session.key, { renew: () => session.renew() });
  let chat;
  try {
    const me = await api("GET", "/actors/me");
    // a customer session's actor is "<customer>@<shop>": a key of another shop (or none) is not this chat's
    if (!me.id.endsWith(`@${shop}`)) return showStatus(SAY.wrongShop, "failed");
    chat = new EmbeddedChat(session, api, me, shop);
    await chat.start();
  } catch (error) {
    console.warn("The chat could not be opened", error);
    chat?.inbox.stop();
    showStatus(error.status === 401 ? SAY.lost : SAY.broken, "failed");
  }
}

boot();
