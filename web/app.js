/**
 * The aitp chat UI: sign in with an actor key, follow the inbox over one WebSocket, list threads,
 * open one (messages, composer, side panel). Plain ES modules, no build step.
 */

import { createApi, listAll } from "./lib/api.js";
import { showAlert } from "./lib/dom.js";
import { Identity } from "./lib/identity.js";
import { Inbox } from "./lib/inbox.js";
import * as session from "./lib/session.js";
import { SidePanel } from "./lib/side-panel.js";
import { ThreadList } from "./lib/thread-list.js";
import { ThreadView } from "./lib/thread-view.js";

const $ = (selector) => document.querySelector(selector);

const elements = {
  signIn: $("#sign-in"),
  signInForm: $("#sign-in-form"),
  keyInput: $("#key-input"),
  signInError: $("#sign-in-error"),
  workspace: $("#workspace"),
  account: $("#account"),
  whoami: $("#whoami"),
  signOut: $("#sign-out"),
  connection: $("#connection"),
  notice: $("#thread-notice"),
  conversation: $("#conversation"),
};

/** Everything that lives while one key is signed in. */
class Session {
  constructor(key, api, identity) {
    this.key = key;
    this.api = api;
    this.identity = identity;
    this.registry = [];
    this.startedAt = Date.now() / 1000;
    this.fetching = new Map(); // thread id -> fetch again when done
    this.list = new ThreadList($("#threads"), {
      registry: () => this.registry,
      me: () => this.identity.actor,
      createThread: (body, mine) => this.createThread(body, mine),
    });
    this.side = new SidePanel($("#details"), {
      registry: () => this.registry,
      addActor: (actor) => this.view.addActor(actor),
    });
    this.view = new ThreadView(
      {
        main: elements.conversation,
        title: $("#thread-title"),
        subtitle: $("#thread-subtitle"),
        log: $("#messages"),
        scroller: $("#scroller"),
        composer: $("#composer"),
      },
      {
        api,
        identity,
        sidePanel: this.side,
        onClosed: (id, why) => this.threadClosed(id, why),
        onPosted: (message) => this.list.touch(message.thread_id, message, { live: false }),
      },
    );
    this.inbox = new Inbox({
      key,
      // first sign-in: from the inbox's position now (the thread list is read separately), not from 0
      cursor: session.storedCursor(key) ?? identity.inboxCursor,
      onEvent: (event) => this.onEvent(event),
      onStatus: (status) => this.onStatus(status),
    });
  }

  async start(threadId) {
    const [threads, registry] = await Promise.all([
      listAll(this.api, "/threads"),
      this.api("GET", "/capabilities"),
    ]);
    this.registry = registry.data;
    for (const thread of threads) {
      this.list.upsert(thread);
    }
    this.list.showCreateForm();
    this.showWhoami();
    this.inbox.start();
    if (threadId) await this.openThread(threadId);
  }

  stop() {
    this.inbox.stop();
    this.view.close();
  }

  showWhoami() {
    elements.whoami.textContent = this.identity.actor;
    this.list.render();
  }

  async openThread(id) {
    showAlert(elements.notice, "");
    session.writeFragment(id);
    this.list.setOpen(id);
    try {
      await this.view.open(id);
    } catch (error) {
      this.view.close();
      this.list.setOpen(null);
      showAlert(elements.notice, error.message);
    }
  }

  threadClosed(id, why) {
    session.writeFragment(null);
    this.list.setOpen(null);
    showAlert(elements.notice, why);
  }

  /** Create a thread with me (declaring `mine`) and the actors of `body`, then open it. */
  async createThread(body, mine) {
    const me = this.identity.actor;
    const others = body.actors.filter((actor) => actor.id !== me);
    const request = { ...body, actors: [{ id: me, capabilities: mine }, ...others] };
    const thread = await this.api("POST", "/threads", request);
    this.list.upsert(thread);
    await this.openThread(thread.id);
    $("#composer-text").focus();
  }

  onStatus({ state, detail, code }) {
    elements.connection.dataset.state = state;
    elements.connection.querySelector(".connection-text").textContent = detail;
    if (code === 4401) signOut("The key was refused by the live connection; sign in again.");
  }

  onEvent(event) {
    session.storeCursor(this.key, event.cursor);
    const id = event.thread_id;
    const live = event.created_at >= this.startedAt - 2; // not a replay of what happened before sign-in
    switch (event.type) {
      case "thread.created":
        this.list.upsert(event.data, event.created_at);
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
        break;
      case "thread.message.created":
        if (!this.list.has(id)) this.refreshThread(id);
        this.list.touch(id, event.data, { live });
        break;
      default:
        break;
    }
    this.view.handleEvent(event);
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

/** Leave the workspace and show the sign-in form (with `message` as an alert). */
function showSignIn(message = "") {
  current?.stop();
  current = null;
  session.forgetKey();
  session.writeFragment(null);
  elements.connection.dataset.state = "idle";
  elements.connection.querySelector(".connection-text").textContent = "Not connected";
  showView("sign-in");
  showAlert(elements.signInError, message);
  elements.keyInput.focus();
}

function signOut(message = "") {
  elements.keyInput.value = "";
  showSignIn(message);
}

async function signInShowingErrors(key, threadId) {
  showAlert(elements.signInError, "");
  try {
    await signIn(key, threadId);
  } catch (error) {
    showSignIn(`Could not sign in: ${error.message}`);
  }
}

/** `#key=…` signs in (then leaves the address bar); `#thread=…` opens a thread. */
async function followFragment() {
  const { key, thread } = session.readFragment();
  if (key) {
    session.writeFragment(thread);
    await signInShowingErrors(key, thread);
  } else if (thread && current) {
    if (current.view.id !== thread) await current.openThread(thread);
  }
}

elements.signInForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const key = elements.keyInput.value.trim();
  if (!key) {
    showAlert(elements.signInError, "Enter an actor key.");
    elements.keyInput.focus();
    return;
  }
  const button = elements.signInForm.querySelector("button[type=submit]");
  button.disabled = true;
  await signInShowingErrors(key, null);
  button.disabled = false;
});

elements.signOut.addEventListener("click", () => signOut());
// the skip link moves focus without touching the fragment (which names the open thread)
document.querySelector(".skip-link").addEventListener("click", (event) => {
  event.preventDefault();
  const target = current?.view.id ? document.querySelector("#composer-text") : elements.conversation;
  target.focus();
});
window.addEventListener("hashchange", followFragment);

async function boot() {
  const { key, thread } = session.readFragment();
  const stored = session.storedKey();
  if (key) await followFragment();
  else if (stored) await signInShowingErrors(stored, thread);
  else signOut();
}

boot();
