/**
 * The open thread: its messages (oldest first, live), the composer, and the `ctx` handed to the
 * capability renderers (see web_contract: me, thread, capabilities, messages, onMessage, post, api).
 *
 * The chat a shop embeds (web/embed-app.js) draws its own header and has no side panel: it leaves out the
 * header elements and `sidePanel`, and sets `brandOnly` (no actor id in a message's tooltip either).
 */

import { listAll } from "./api.js";
import { h, replaceChildren } from "./dom.js";
import { loadRenderers, messageView } from "./message-view.js";
import { showError } from "./plain-words.js";
import { threadTitle } from "./thread-list.js";

const CATCH_UP_MS = 3000; // after a reconnect, how long the replay of missed events may take to arrive
const ACTOR_EVENTS = new Set(["thread.actor.joined", "thread.actor.updated", "thread.actor.left"]);

export class ThreadView {
  /**
   * @param {object} elements {main, title, subtitle, identities, avatars, log, scroller, composer, newMessages};
   *   without `title` the view draws no header
   * @param {{api: Function, identity: object, people: object, sidePanel?: object,
   *          onClosed: (id: string, why: string) => void, brandOnly?: boolean}} options
   */
  constructor(elements, { api, identity, people, sidePanel = null, onClosed, onPosted, brandOnly = false }) {
    this.elements = elements;
    this.people = people;
    this.divider = null; // the "New messages" line, while there are messages below it the user has not seen
    this.api = api;
    this.identity = identity;
    this.sidePanel = sidePanel;
    this.brandOnly = brandOnly;
    this.onClosed = onClosed;
    this.onPosted = onPosted;
    this.id = null;
    this.thread = null;
    this.capabilities = { data: [], unknown: [] };
    this.me = null;
    this.messages = [];
    this.byId = new Map();
    this.listeners = new Set();
    this.pending = null; // events that arrive while the thread loads
    this.ctx = null;
    this.#buildComposer();
    this.#watchScrolling();
  }

  /** Open thread `id` (resolves once its messages are shown). */
  async open(id) {
    this.close();
    this.id = id;
    this.pending = [];
    this.elements.main.dataset.state = "loading";
    this.elements.log.setAttribute("aria-busy", "true");
    replaceChildren(this.elements.log, h("p", { class: "hint" }, "Loading…"));
    const [thread, capabilities] = await Promise.all([
      this.api("GET", `/threads/${id}`),
      this.api("GET", `/threads/${id}/capabilities`),
      loadRenderers(),
      this.people.load(id),
    ]);
    if (this.id !== id) return;
    this.thread = thread;
    this.capabilities = capabilities;
    this.me = this.identity.admin ? this.#defaultActAs(thread) : this.identity.actor;
    const messages = await listAll(this.api, `/threads/${id}/messages`, { order: "asc" });
    if (this.id !== id) return;
    this.ctx = this.#context();
    for (const message of messages) this.#remember(message);
    this.#renderAll();
    this.#renderHeader();
    this.#renderSide();
    this.elements.main.dataset.state = "open";
    this.elements.log.removeAttribute("aria-busy");
    const pending = this.pending;
    this.pending = null;
    for (const event of pending) this.handleEvent(event);
    this.#showLatest();
  }

  /** Bring message `id` of the open thread into view and mark it for a moment (a search result chosen); false
   * when it is not there (deleted since). */
  showMessage(id) {
    const article = this.#articleOf(id);
    if (!article) return false;
    const { scroller } = this.elements;
    scroller.scrollTop = article.offsetTop - scroller.offsetTop - Math.max(8, (scroller.clientHeight - article.offsetHeight) / 2);
    for (const found of this.elements.log.querySelectorAll(":scope > article.found")) found.classList.remove("found");
    article.classList.add("found"); // its animation runs once (styles.css): the class stays, harmless
    return true;
  }

  close() {
    this.id = null;
    this.#clearDivider();
    this.thread = null;
    this.messages = [];
    this.byId = new Map();
    this.listeners = new Set();
    this.pending = null;
    this.ctx = null;
    this.elements.main.dataset.state = "empty";
  }

  /** An inbox event of this thread. */
  handleEvent(event) {
    if (event.thread_id !== this.id) return;
    if (this.pending) {
      this.pending.push(event);
      return;
    }
    switch (event.type) {
      case "thread.message.created":
        this.#append(event.data);
        break;
      case "thread.message.updated":
        this.#replace(event.data);
        break;
      case "thread.message.deleted":
        this.#delete(event.data.id);
        break;
      case "thread.message.refused":
        this.#refused(event.data);
        break;
      case "thread.paused":
      case "thread.resumed":
        this.thread = { ...this.thread, turns: { ...this.thread.turns, paused: event.type === "thread.paused" } };
        this.#showPause(event.data);
        break;
      case "thread.updated":
        this.thread = event.data;
        this.#renderHeader();
        break;
      case "thread.capabilities.updated":
        this.capabilities = event.data;
        this.sidePanel?.showCapabilities(this.capabilities);
        break;
      case "thread.deleted":
        this.#closeBecause("This thread was deleted.");
        break;
      default:
        if (ACTOR_EVENTS.has(event.type)) this.#actorChanged(event);
    }
  }

  /** POST a message as me (an admin writes as the actor chosen in "Post as"). */
  async post(content) {
    const id = this.id;
    const body = { content };
    if (this.identity.admin && this.me !== this.identity.actor) body.metadata = { actor: this.me };
    const message = await this.api("POST", `/threads/${id}/messages`, body);
    if (this.id === id) this.#append(message);
    this.onPosted?.(message);
    return message;
  }

  /** Add an actor (or update one's capabilities) from the side panel. */
  async addActor(actor) {
    const added = await this.api("POST", `/threads/${this.id}/actors`, actor);
    this.#upsertActor(added);
    await this.#refreshCapabilities();
    return added;
  }

  #context() {
    const view = this;
    return {
      get me() {
        return view.me;
      },
      // mine: written as me (in a shop's embedded chat, also as the visitor I was before signing in)
      mine: (actor) => actor === view.me || Boolean(view.people.isMe?.(actor)),
      get thread() {
        return view.thread;
      },
      get capabilities() {
        return view.capabilities;
      },
      messages: () => [...view.messages],
      onMessage: (fn) => {
        view.listeners.add(fn);
        return () => view.listeners.delete(fn);
      },
      post: (content) => view.post(content),
      api: view.api,
      people: view.people,
    };
  }

  #remember(message) {
    if (this.byId.has(message.id)) return false;
    this.byId.set(message.id, message);
    this.messages.push(message);
    return true;
  }

  #append(message) {
    if (!this.#remember(message)) return; // already shown: the POST answer and its event both arrive
    const atEnd = this.#nearEnd();
    const mine = message.metadata?.actor === this.me;
    const article = this.#view(message);
    if (!mine && (!atEnd || this.catchingUp) && !this.divider) {
      // arrived while the user reads further up, or while the connection was down: mark where the unseen start
      this.divider = h("p", { class: "new-divider", role: "separator" }, "New messages");
      this.elements.log.append(this.divider);
    }
    this.elements.log.append(article);
    this.elements.log.querySelector(":scope > .hint")?.remove();
    for (const fn of [...this.listeners]) fn(message);
    if (mine) {
      this.#clearDivider();
      this.#scrollToEnd();
    } else if (atEnd) {
      this.#reveal(article);
    } else {
      this.elements.newMessages.hidden = false;
    }
  }

  #replace(message) {
    if (!this.byId.has(message.id)) return this.#append(message);
    this.byId.set(message.id, message);
    this.messages = this.messages.map((item) => (item.id === message.id ? message : item));
    this.#articleOf(message.id)?.replaceWith(this.#view(message));
  }

  #delete(id) {
    if (!this.byId.delete(id)) return;
    this.messages = this.messages.filter((item) => item.id !== id);
    this.#articleOf(id)?.remove();
  }

  /** A system line: a member's capability message was refused because some actors cannot read it. */
  #refused(refusal) {
    const atEnd = this.#nearEnd();
    const name = (id) => (id === this.me ? "you" : this.people.name(id));
    const who = refusal.unsupported_by.map(name).join(", ");
    const sender = refusal.actor === this.me ? "You" : this.people.name(refusal.actor);
    const line = h(
      "div",
      { class: "system-line", role: "status", dataset: { event: "refused" } },
      h("span", {}, `${sender} sent a message that could not be delivered: ${who} can't read that kind of message.`),
      " ",
      h(
        "details",
        { class: "error-detail" },
        h("summary", {}, "Details"),
        h("code", {}, `${refusal.type ?? "message"} · ${refusal.capability} ${refusal.version}`),
      ),
    );
    this.elements.log.append(line);
    if (atEnd) this.#scrollToEnd();
  }

  /**
   * While agents wait for a person (they used their turns: the server refuses their posts), a status line at
   * the end says so; a person's message (or the creator raising the budget) takes it away.
   */
  #showPause(turns) {
    this.elements.log.querySelector(".system-line[data-event=paused]")?.remove();
    if (!this.thread?.turns?.paused) return;
    const atEnd = this.#nearEnd();
    const budget = turns?.turn_budget ?? this.thread.turns.budget;
    const said = budget ? `${budget} messages in a row` : "many messages in a row";
    this.elements.log.append(
      h(
        "div",
        { class: "system-line", role: "status", dataset: { event: "paused" } },
        h("span", {}, `The agents here sent ${said}, so they are waiting for a person. Write to let them go on.`),
      ),
    );
    if (atEnd) this.#scrollToEnd();
  }

  /** The <article> of `message`; in the shop's embedded chat, without its author's id as a tooltip. */
  #view(message) {
    const article = messageView(message, this.ctx);
    if (this.brandOnly) for (const author of article.querySelectorAll(".message-author[title]")) author.removeAttribute("title");
    return article;
  }

  #articleOf(id) {
    return this.elements.log.querySelector(`article[data-message-id="${CSS.escape(id)}"]`);
  }

  #renderAll() {
    this.listeners = new Set(); // every renderer registers again for the parts it draws now
    replaceChildren(
      this.elements.log,
      this.messages.length
        ? this.messages.map((message) => this.#view(message))
        : h("p", { class: "hint" }, "No messages yet. Say hello."),
    );
    this.#showPause(null);
  }

  #renderHeader() {
    if (!this.elements.title) return; // the embedded chat draws the shop's header itself
    const others = this.thread.actors.map((actor) => actor.id).filter((id) => id !== this.me);
    this.elements.title.textContent = threadTitle(this.thread, this.me, this.people);
    this.elements.subtitle.textContent = others.length
      ? `With ${others.map((id) => this.people.name(id)).join(", ")}`
      : "Only you so far";
    replaceChildren(this.elements.identities, this.#identities(others));
    replaceChildren(
      this.elements.avatars,
      (others.length ? others : [this.me]).slice(0, 3).map((id) => this.people.avatar(id, "medium")),
    );
    this.#renderActAs();
  }

  /**
   * After "With …": what the server checked about those people. One person: their mark. Several: how many
   * are not verified, named in the tooltip (the People panel marks each one).
   */
  #identities(others) {
    if (others.length === 0) return null;
    if (others.length === 1) return this.people.badge(others[0]);
    const unverified = others.filter((id) => !this.people.verified(id));
    if (unverified.length === 0) {
      return h(
        "span",
        { class: "identity identity-verified", title: "Everyone here is verified", dataset: { verified: "true" } },
        h("span", { class: "identity-id" }, "all verified"),
        " ",
        h("span", { class: "identity-check", "aria-hidden": "true" }, "✓"),
      );
    }
    const names = unverified.map((id) => this.people.name(id)).join(", ");
    const said = `not verified: ${names}. These names are what the accounts say about themselves.`;
    return h(
      "span",
      { class: "identity identity-unverified", title: said, dataset: { verified: "false" } },
      h("span", { "aria-hidden": "true" }, `${unverified.length} unverified`),
      " ",
      h("span", { class: "visually-hidden" }, said),
    );
  }

  /** The inbox is live again after a drop: what it replays now arrived while the user could not see it. */
  catchUp() {
    this.catchingUp = true;
    clearTimeout(this.catchUpTimer);
    this.catchUpTimer = setTimeout(() => {
      this.catchingUp = false;
    }, CATCH_UP_MS);
  }

  /** Profiles arrived: names and avatars change everywhere this view shows them. */
  refreshPeople() {
    if (!this.thread || !this.ctx) return;
    const atEnd = this.#nearEnd();
    this.#renderHeader();
    this.sidePanel?.showActors(this.thread.actors, this.me, this.thread.id);
    this.#renderAll();
    if (atEnd) this.#scrollToEnd();
  }

  #renderSide() {
    if (!this.sidePanel) return;
    this.sidePanel.showActors(this.thread.actors, this.me, this.thread.id);
    this.sidePanel.showCapabilities(this.capabilities);
    this.sidePanel.showAddActorForm();
  }

  #actorChanged(event) {
    if (event.type === "thread.actor.left") {
      if (event.data.id === this.me && !this.identity.admin) {
        this.#checkStillMember();
        return;
      }
      this.thread = { ...this.thread, actors: this.thread.actors.filter((actor) => actor.id !== event.data.id) };
      this.sidePanel?.showActors(this.thread.actors, this.me, this.thread.id);
      this.#renderHeader();
    } else {
      this.#upsertActor(event.data);
    }
    this.#refreshCapabilities();
  }

  /** I left or was removed; a replayed event may be old news (I was added back), so ask the server. */
  async #checkStillMember() {
    const id = this.id;
    try {
      await this.api("GET", `/threads/${id}`);
    } catch (error) {
      if (error.status === 404 && this.id === id) this.#closeBecause("You were removed from this thread.");
    }
  }

  #upsertActor(actor) {
    const actors = this.thread.actors.some((item) => item.id === actor.id)
      ? this.thread.actors.map((item) => (item.id === actor.id ? actor : item))
      : [...this.thread.actors, actor];
    this.thread = { ...this.thread, actors };
    this.sidePanel?.showActors(actors, this.me, this.thread.id);
    this.#renderHeader();
  }

  async #refreshCapabilities() {
    const id = this.id;
    try {
      const capabilities = await this.api("GET", `/threads/${id}/capabilities`);
      if (this.id !== id) return;
      this.capabilities = capabilities;
      this.sidePanel?.showCapabilities(capabilities);
    } catch (error) {
      // the next actor or capability event refreshes it again
      console.warn("Could not refresh the capability table", error);
    }
  }

  #closeBecause(why) {
    const id = this.id;
    this.close();
    this.onClosed(id, why);
  }

  // ------------------------------------------------------------------ composer and "post as"

  #buildComposer() {
    const { composer } = this.elements;
    const textarea = composer.querySelector("textarea");
    const alert = composer.querySelector("[role=alert]");
    const button = composer.querySelector("button[type=submit]");
    composer.addEventListener("submit", async (event) => {
      event.preventDefault();
      const text = textarea.value;
      if (!text.trim() || !this.id) return;
      showError(alert, null);
      button.disabled = true;
      try {
        await this.post(text);
        textarea.value = "";
      } catch (error) {
        showError(alert, error);
      } finally {
        button.disabled = false;
        textarea.focus();
      }
    });
    textarea.addEventListener("keydown", (event) => {
      // Enter sends, Shift+Enter is a new line; never interrupt an IME composition
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        composer.requestSubmit();
      }
    });
    const actAs = composer.querySelector("select[name=act-as]");
    actAs?.addEventListener("change", () => {
      this.me = actAs.value;
      this.#renderAll();
      this.sidePanel?.showActors(this.thread.actors, this.me, this.thread.id);
      this.#renderHeader();
    });
  }

  #defaultActAs(thread) {
    const ids = thread.actors.map((actor) => actor.id);
    if (ids.includes(this.identity.actor)) return this.identity.actor;
    return thread.actors.find((actor) => actor.role === "user")?.id ?? ids[0] ?? this.identity.actor;
  }

  #renderActAs() {
    const wrapper = this.elements.composer.querySelector(".act-as");
    if (!wrapper) return; // (the embedded chat: never an admin)
    const select = wrapper.querySelector("select");
    wrapper.hidden = !this.identity.admin;
    if (!this.identity.admin) return;
    replaceChildren(
      select,
      this.thread.actors.map((actor) => h("option", { value: actor.id, selected: actor.id === this.me }, actor.id)),
    );
  }

  // ------------------------------------------------------------------ scrolling

  #nearEnd() {
    const { scroller } = this.elements;
    return scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 80;
  }

  #scrollToEnd() {
    const { scroller } = this.elements;
    scroller.scrollTop = scroller.scrollHeight;
    this.elements.newMessages.hidden = true;
  }

  /** Bring a new message into view: its top, when it is taller than the view (a card of products). */
  #reveal(article) {
    const { scroller } = this.elements;
    if (article.offsetHeight > scroller.clientHeight * 0.8) {
      scroller.scrollTop = article.offsetTop - scroller.offsetTop - 8;
      this.elements.newMessages.hidden = true;
    } else {
      this.#scrollToEnd();
    }
  }

  /** On opening: the end of the conversation, or the top of its last message if that is taller than the view. */
  #showLatest() {
    const last = this.elements.log.querySelector(":scope > article.message:last-of-type");
    if (last) this.#reveal(last);
    else this.#scrollToEnd();
  }

  #clearDivider() {
    this.divider?.remove();
    this.divider = null;
    this.elements.newMessages.hidden = true;
  }

  #watchScrolling() {
    const { scroller, newMessages, log } = this.elements;
    scroller.addEventListener("scroll", () => {
      if (!newMessages.hidden && this.#nearEnd()) newMessages.hidden = true;
    });
    newMessages.addEventListener("click", () => {
      const target = this.divider ?? log.lastElementChild;
      if (target) scroller.scrollTop = target.offsetTop - scroller.offsetTop - 8;
      newMessages.hidden = true;
      const first = this.divider?.nextElementSibling;
      if (first) {
        first.tabIndex = -1;
        first.focus({ preventScroll: true });
      }
    });
    // an expanded JSON view or form opens where it is: keep it in view
    log.addEventListener(
      "toggle",
      (event) => {
        if (event.target.open) event.target.scrollIntoView({ block: "nearest" });
      },
      true,
    );
  }
}
