/**
 * The chat UI: sign in (a one-time link, or an access key), follow the inbox over one WebSocket, list
 * conversations, open one (messages, composer, the people in it). Plain ES modules, no build step.
 *
 * On a phone the list, the conversation and its "About" panel are separate screens (`body[data-screen]`);
 * on a wide screen they sit side by side.
 */

import { ApiError, REACHABLE, createApi, listAll } from "./lib/api.js";
import { Identity } from "./lib/identity.js";
import { Inbox } from "./lib/inbox.js";
import { People } from "./lib/people.js";
import { Presence, presenceElements } from "./lib/presence.js";
import { showError } from "./lib/plain-words.js";
import * as session from "./lib/session.js";
import { SidePanel } from "./lib/side-panel.js";
import { ThreadList } from "./lib/thread-list.js";
import { ThreadView } from "./lib/thread-view.js";

const $ = (selector) => document.querySelector(selector);
const PREVIEW_READS = 4; // threads whose last message is read at once after sign-in

const elements = {
  signIn: $("#sign-in"),
  signInForm: $("#sign-in-form"),
  keyInput: $("#key-input"),
  signInError: $("#sign-in-error"),
  workspace: $("#workspace"),
  account: $("#account"),
  whoami: $("#whoami"),
  myIdentity: $("#my-identity"),
  myAvatar: $("#my-avatar"),
  signOut: $("#sign-out"),
  connection: $("#connection"),
  notice: $("#thread-notice"),
  conversation: $("#conversation"),
  title: $("#thread-title"),
  back: $("#back-to-list"),
  showDetails: $("#show-details"),
};

function showScreen(screen) {
  document.body.dataset.screen = screen;
  elements.showDetails.setAttribute("aria-expanded", String(screen === "details"));
}

/** Everything that lives while one key is signed in. */
class Session {
  constructor(key, api, identity) {
    this.key = key;
    this.api = api;
    this.identity = identity;
    this.people = new People(api);
    this.registry = [];
    this.fetching = new Map(); // thread id -> fetch again when done
    this.list = new ThreadList($("#threads"), {
      registry: () => this.registry,
      me: () => this.identity.actor,
      people: this.people,
      createThread: (body, mine) => this.createThread(body, mine),
    });
    this.side = new SidePanel($("#details"), {
      registry: () => this.registry,
      people: this.people,
      addActor: (actor) => this.view.addActor(actor),
    });
    this.view = new ThreadView(
      {
        main: elements.conversation,
        title: elements.title,
        subtitle: $("#thread-subtitle"),
        identities: $("#thread-identities"),
        avatars: $("#thread-avatars"),
        log: $("#messages"),
        scroller: $("#scroller"),
        composer: $("#composer"),
        newMessages: $("#new-messages"),
      },
      {
        api,
        identity,
        people: this.people,
        sidePanel: this.side,
        onClosed: (id, why) => this.threadClosed(id, why),
        onPosted: (message) => this.list.touch(message.thread_id, message),
      },
    );
    // the agent's presence in the conversation's head, and "… is typing" under its messages
    this.presence = new Presence(presenceElements($(".thread-names"), $("#composer")), {
      api,
      name: (actor) => this.people.name(actor),
    });
    this.people.onChange((actors) => {
      this.list.render();
      this.showWhoami();
      // the thread's people, or someone its messages name (a quote's payee, looked up on its own)
      const shown = (id) => this.view.thread?.actors.some((actor) => actor.id === id) || this.people.lookups.has(id);
      if (this.view.thread && [...actors].some(shown)) this.view.refreshPeople();
    });
    this.inbox = new Inbox({
      api,
      // first sign-in: from the inbox's position now (the thread list is read separately), not from 0
      cursor: session.storedCursor(key) ?? identity.inboxCursor,
      onEvent: (event) => this.onEvent(event),
      onActivity: (frame) => this.presence.handleEvent(frame), // outside the log: no cursor
      onStatus: (status) => this.onStatus(status),
    });
  }

  async start(threadId) {
    const [threads, registry] = await Promise.all([
      listAll(this.api, "/threads"),
      this.api("GET", "/capabilities"),
    ]);
    this.registry = registry.data;
    // my own name and verification, before any thread of mine is read (a new account has none)
    this.api("GET", "/actors/me/profile")
      .then((profile) => this.people.set(profile))
      .catch((error) => console.warn("Could not read my profile", error));
    for (const thread of threads) this.list.upsert(thread);
    this.list.showCreateForm();
    this.showWhoami();
    this.inbox.start();
    this.readPreviews(threads.map((thread) => thread.id));
    if (threadId) await this.openThread(threadId);
    else {
      showScreen("list");
      focusHeading($("#threads-heading"));
    }
  }

  /** The last message and the people of each thread, a few threads at a time (for the list). */
  async readPreviews(ids) {
    const queue = [...ids];
    const worker = async () => {
      while (queue.length && current === this) {
        const id = queue.shift();
        try {
          const [page] = await Promise.all([
            this.api("GET", `/threads/${encodeURIComponent(id)}/messages?limit=1&order=desc`),
            this.people.load(id),
          ]);
          if (page.data[0]) this.list.touch(id, page.data[0]);
        } catch (error) {
          if (error.status === 429) {
            // many conversations: over the key's request rate; wait, then read this one again
            queue.push(id);
            await new Promise((resolve) => setTimeout(resolve, 1000));
          } else if (error.status !== 404) {
            console.warn(`Could not read the last message of ${id}`, error);
          }
        }
      }
    };
    await Promise.all(Array.from({ length: PREVIEW_READS }, worker));
  }

  stop() {
    this.inbox.stop();
    this.view.close();
    this.presence.stop();
  }

  showWhoami() {
    const me = this.identity.actor;
    elements.whoami.textContent = this.people.name(me);
    // how the others see me; an admin key is the operator's, no account of its own
    elements.myIdentity.replaceChildren(this.identity.admin ? "" : this.people.badge(me));
    elements.myAvatar.replaceChildren(this.people.avatar(me, "small"));
  }

  /** Open thread `id` (at `message`, when a search result names one). */
  async openThread(id, { focus = true, message = null } = {}) {
    showError(elements.notice, null);
    session.writeFragment(id);
    this.list.setOpen(id);
    showScreen("conversation");
    const focused = document.activeElement;
    try {
      await this.view.open(id);
      this.presence.open(this.view.thread, this.view.me);
      if (message) this.view.showMessage(message);
      // to the heading, unless the user went somewhere meanwhile (typing into the composer on a slow network)
      if (focus && document.activeElement === focused) focusHeading(elements.title);
    } catch (error) {
      this.view.close();
      this.presence.close();
      this.list.setOpen(null);
      showError(elements.notice, error);
    }
  }

  threadClosed(id, why) {
    this.presence.close();
    session.writeFragment(null);
    this.list.setOpen(null);
    elements.notice.hidden = false;
    elements.notice.textContent = why;
  }

  /** Create a thread with me (declaring `mine`) and the actors of `body`, then open it. */
  async createThread(body, mine) {
    const me = this.identity.actor;
    const others = body.actors.filter((actor) => actor.id !== me);
    const request = { ...body, actors: [{ id: me, capabilities: mine }, ...others] };
    const thread = await this.api("POST", "/threads", request);
    this.list.upsert(thread);
    await this.openThread(thread.id, { focus: false });
    $("#composer-text").focus();
  }

  onStatus({ state, detail, code, errorCode = null }) {
    elements.connection.dataset.state = state;
    elements.connection.querySelector(".connection-text").textContent = detail;
    if (state === "live") {
      clearNetworkErrors();
      if (this.dropped) this.view.catchUp(); // what the inbox replays now is marked as new
    }
    if (state === "offline") this.dropped = true;
    if (code === 4401) signOut(new ApiError(401, { error: { code: errorCode ?? "invalid_api_key", message: detail } }));
  }

  onEvent(event) {
    session.storeCursor(this.key, event.cursor);
    const id = event.thread_id;
    switch (event.type) {
      case "thread.created":
        this.list.upsert(event.data, event.created_at);
        this.people.load(id);
        break;
      case "thread.updated":
        this.list.upsert(event.data);
        break;
      case "thread.deleted":
        this.list.remove(id);
        break;
      case "thread.actor.left": // if it was me, the thread is gone from my list (refreshThread: 404)
      case "thread.actor.joined":
      case "thread.actor.updated":
        this.refreshThread(id);
        this.people.load(id, true);
        break;
      case "thread.message.created":
        if (!this.list.has(id)) this.refreshThread(id);
        this.list.touch(id, event.data);
        break;
      default:
        break;
    }
    this.view.handleEvent(event);
    // the agent's message ends its typing line; a change of actors may change who the agent is
    if (this.view.thread && id === this.view.id) this.presence.open(this.view.thread, this.view.me);
    this.presence.handleEvent(event);
  }

  /** Fetch a thread again (a new one I was added to, or one whose actors changed). */
  async refreshThread(id) {
    if (this.fetching.has(id)) {
      this.fetching.set(id, true); // changed while in flight: fetch once more afterwards
      return;
    }
    this.fetching.set(id, false);
    try {
      const thread = await this.api("GET", `/threads/${id}`);
      this.list.upsert(thread);
    } catch (error) {
      // 404: deleted, or I am no longer a member; anything else: keep what the list shows
      if (error.status === 404) this.list.remove(id);
      else console.warn(`Could not load thread ${id}`, error);
    } finally {
      const again = this.fetching.get(id);
      this.fetching.delete(id);
      if (again) this.refreshThread(id);
    }
  }
}

let current = null;

/** The server answers again: every alert saying it cannot be reached is out of date. */
function clearNetworkErrors() {
  for (const region of document.querySelectorAll('[role=alert][data-code="network_error"]')) showError(region, null);
}

/** Move focus to a heading (so screen readers announce where the user is), not to the page body. */
function focusHeading(heading) {
  if (!heading.hasAttribute("tabindex")) heading.setAttribute("tabindex", "-1");
  heading.focus();
}

function showView(view) {
  document.body.dataset.view = view;
  elements.signIn.hidden = view !== "sign-in";
  elements.workspace.hidden = view !== "workspace";
  elements.account.hidden = view !== "workspace";
}

/** Check `key` with the server and open the workspace; rejects with the server's error. */
async function signIn(key, threadId = null) {
  const api = createApi(key);
  const identity = new Identity();
  await identity.load(api); // 401 for a bad key
  current?.stop();
  session.storeKey(key);
  current = new Session(key, api, identity);
  showView("workspace");
  await current.start(threadId);
}

/** Exchange a one-time sign-in code for a key of its own (no key is needed for this call). */
async function keyOfCode(code) {
  const signedIn = await createApi(null)("POST", "/sign-in", { code });
  return signedIn.key;
}

/** Leave the workspace and show the sign-in form (with `error` as an alert). */
function showSignIn(error = null) {
  current?.stop();
  current = null;
  session.forgetKey();
  session.writeFragment(null);
  elements.connection.dataset.state = "idle";
  elements.connection.querySelector(".connection-text").textContent = "Not connected";
  showView("sign-in");
  showError(elements.signInError, error);
  elements.keyInput.focus();
}

function signOut(error = null) {
  elements.keyInput.value = "";
  showSignIn(error);
}

async function signInShowingErrors(key, threadId) {
  showError(elements.signInError, null);
  try {
    await signIn(key, threadId);
  } catch (error) {
    if (error.status === 401 && error.code !== "expired_api_key") {
      error.sentence = "That access key isn't valid. Check it, or ask for a new sign-in link.";
    }
    showSignIn(error);
  }
}

/** `#code=…` signs in (then leaves the address bar); `#thread=…` opens a thread. */
async function followFragment() {
  const { code, thread, message, key } = session.readFragment();
  if (key) {
    // an old link with the key itself: not used, and taken out of the address bar and its history
    session.writeFragment(null);
    if (!current) showSignIn(new Error("This link is out of date. Ask for a new sign-in link."));
    return;
  }
  if (code) {
    session.writeFragment(thread);
    showError(elements.signInError, null);
    let newKey;
    try {
      newKey = await keyOfCode(code);
    } catch (error) {
      showSignIn(error);
      return;
    }
    await signInShowingErrors(newKey, thread);
  } else if (thread && current) {
    if (current.view.id !== thread) await current.openThread(thread, { message });
    else {
      session.writeFragment(thread);
      showScreen("conversation");
      if (message) current.view.showMessage(message);
    }
  }
}

elements.signInForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const key = elements.keyInput.value.trim();
  if (!key) {
    showError(elements.signInError, new Error("Enter your access key, or open your sign-in link."));
    elements.keyInput.focus();
    return;
  }
  const button = elements.signInForm.querySelector("button[type=submit]");
  button.disabled = true;
  await signInShowingErrors(key, null);
  button.disabled = false;
});

elements.signOut.addEventListener("click", () => signOut());
elements.back.addEventListener("click", (event) => {
  event.preventDefault();
  session.writeFragment(null);
  current?.list.setOpen(null);
  showScreen("list");
  const link = current?.view.id && document.querySelector(`#thread-list li[data-thread-id="${CSS.escape(current.view.id)}"] a`);
  if (link) link.focus();
  else focusHeading($("#threads-heading"));
});
elements.showDetails.addEventListener("click", () => {
  showScreen("details");
  focusHeading($("#people-heading"));
});
$("#details").addEventListener("click", (event) => {
  if (event.target.id !== "close-details") return;
  showScreen("conversation");
  elements.showDetails.focus();
});
// the skip link moves focus without touching the fragment (which names the open thread)
document.querySelector(".skip-link").addEventListener("click", (event) => {
  event.preventDefault();
  const target = current?.view.id ? document.querySelector("#composer-text") : elements.conversation;
  target.focus();
});
window.addEventListener("hashchange", followFragment);
window.addEventListener(REACHABLE, clearNetworkErrors);
// the browser is online again: ask the server (its answer clears what said it could not be reached)
window.addEventListener("online", () => current?.api("GET", "/actors/me").catch(() => {}));

async function boot() {
  const { code, key, thread } = session.readFragment();
  const stored = session.storedKey();
  if (code || key) await followFragment();
  else if (stored) await signInShowingErrors(stored, thread);
  else signOut();
}

boot();
