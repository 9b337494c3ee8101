/**
 * The list of conversations (live) with search, and the "New conversation" form, in the <nav>.
 *
 * Threads are kept by id, most recent activity first; each is a link to `#thread=<id>`, so opening one is
 * ordinary keyboard navigation and the address names the open thread. Each shows who is in it, the last
 * message and who sent it, and whether it has messages the user has not seen (remembered per browser).
 * The heading, "New conversation" and search stay at the top however long the list grows.
 */

import { capabilityFields } from "./actor-fields.js";
import { disclosureForm } from "./disclosure-form.js";
import { h, replaceChildren, uniqueId } from "./dom.js";
import { formatTime } from "./format.js";
import { plainText } from "./markdown.js";
import { capabilityJson, partsOf } from "./message-view.js";
import { describeKind } from "./plain-words.js";

/** A thread's display name: its `metadata.title`, else the names of the other actors, else a default. */
export function threadTitle(thread, me, people = null) {
  if (thread.metadata?.title) return thread.metadata.title;
  const others = thread.actors.map((actor) => actor.id).filter((id) => id !== me);
  const name = (id) => (people ? people.name(id) : id);
  return others.length ? others.map(name).join(", ") : "Just you";
}

const READ = "aitp.read.";

export class ThreadList {
  /**
   * @param {HTMLElement} root the <nav>
   * @param {{registry: () => object[], me: () => string|null, people: object,
   *          createThread: (body: object, mine: string[]) => Promise<object>}} options
   */
  constructor(root, { registry, me, people, createThread }) {
    this.root = root;
    this.registry = registry;
    this.me = me;
    this.people = people;
    this.createThread = createThread;
    this.threads = new Map(); // id -> {thread, activity, last, unread}
    this.openId = null;
    this.query = "";
    this.list = h("ul", { class: "thread-list", id: "thread-list", "aria-labelledby": "threads-heading" });
    this.empty = h("p", { class: "hint empty" }, "No conversations yet. Start one, or wait for a shop to write to you.");
    this.noMatch = h("p", { class: "hint", hidden: true }, "No conversation matches your search.");
    this.formSlot = h("div", { class: "new-thread-slot" });
    const searchId = uniqueId("search");
    this.search = h("input", {
      id: searchId,
      type: "search",
      autocomplete: "off",
      placeholder: "Search conversations",
      oninput: () => {
        this.query = this.search.value.trim().toLowerCase();
        this.render();
      },
    });
    replaceChildren(
      root,
      h(
        "div",
        { class: "threads-head" },
        h("h2", { id: "threads-heading" }, "Conversations"),
        this.formSlot,
        h("label", { for: searchId, class: "visually-hidden" }, "Search conversations"),
        this.search,
      ),
      this.empty,
      this.noMatch,
      this.list,
    );
  }

  has(id) {
    return this.threads.has(id);
  }

  get(id) {
    return this.threads.get(id)?.thread ?? null;
  }

  /** Add or update threads; `activity` (seconds) orders the list. */
  upsert(thread, activity = thread.created_at) {
    const entry = this.threads.get(thread.id);
    if (entry) {
      entry.thread = thread;
      entry.activity = Math.max(entry.activity, activity);
    } else {
      this.threads.set(thread.id, { thread, activity, last: null, unread: false });
    }
    this.render();
  }

  remove(id) {
    if (this.threads.delete(id)) this.render();
  }

  /** The newest message of thread `id` (live, or read after a reload): it moves up and shows it. */
  touch(id, message) {
    const entry = this.threads.get(id);
    if (!entry) return;
    if (entry.last && entry.last.created_at > message.created_at) return; // an older one, read late
    entry.activity = Math.max(entry.activity, message.created_at);
    entry.last = message;
    const mine = message.metadata?.actor === this.me();
    if (id === this.openId || mine) this.#markRead(id, message.created_at);
    entry.unread = !mine && id !== this.openId && message.created_at > this.#readUpTo(id);
    this.render();
  }

  setOpen(id) {
    this.openId = id;
    const entry = this.threads.get(id);
    if (entry) {
      entry.unread = false;
      if (entry.last) this.#markRead(id, entry.last.created_at);
    }
    this.render();
  }

  #readKey(id) {
    return `${READ}${this.me()}.${id}`;
  }

  #readUpTo(id) {
    return Number(localStorage.getItem(this.#readKey(id)) ?? 0);
  }

  #markRead(id, seconds) {
    if (seconds > this.#readUpTo(id)) localStorage.setItem(this.#readKey(id), String(seconds));
  }

  render() {
    const entries = [...this.threads.values()].sort(
      (a, b) => b.activity - a.activity || (a.thread.id < b.thread.id ? 1 : -1),
    );
    const me = this.me();
    const shown = entries
      .map((entry) => ({ entry, title: threadTitle(entry.thread, me, this.people), line: this.#preview(entry, me) }))
      .filter(({ entry, title, line }) => !this.query || this.#matches(entry, title, line));
    this.empty.hidden = entries.length > 0;
    this.noMatch.hidden = entries.length === 0 || shown.length > 0;
    replaceChildren(
      this.list,
      shown.map(({ entry, title, line }) => {
        const { thread, activity, unread } = entry;
        const others = thread.actors.map((actor) => actor.id).filter((id) => id !== me);
        const other = others[0] ?? me;
        return h(
          "li",
          { dataset: { threadId: thread.id } },
          h(
            "a",
            {
              href: `#thread=${encodeURIComponent(thread.id)}`,
              class: unread ? "thread-link fresh" : "thread-link",
              "aria-current": thread.id === this.openId ? "page" : null,
            },
            this.people.avatar(other, "medium"),
            h(
              "span",
              { class: "thread-text" },
              h(
                "span",
                { class: "thread-line" },
                h("span", { class: "thread-title" }, title),
                h("time", { class: "thread-time" }, formatTime(activity)),
              ),
              h(
                "span",
                { class: "thread-meta" },
                // who the conversation is with, as checked (the avatar and the name alone prove nothing);
                // on a line of its own with the preview, so the title keeps the width it needs
                others.length === 1 && this.#badge(others[0], title),
                h("span", { class: "thread-preview" }, line),
              ),
            ),
            unread && h("span", { class: "visually-hidden" }, " (unread)"),
          ),
        );
      }),
    );
  }

  /** The mark of the one other actor, before the preview; under a subject it says whose mark it is. */
  #badge(actor, title) {
    const badge = this.people.badge(actor);
    const name = this.people.name(actor);
    if (title !== name) badge.prepend(h("span", { class: "visually-hidden" }, `with ${name}: `));
    return badge;
  }

  #preview({ thread, last }, me) {
    if (!last) return thread.actors.length > 1 ? "No messages yet" : "Only you so far";
    const author = last.metadata?.actor;
    const who = author === me ? "You" : this.people.name(author ?? "");
    return `${who}: ${preview(last)}`;
  }

  #matches({ thread }, title, line) {
    const names = thread.actors
      .map((actor) => `${actor.id} ${this.people.name(actor.id)} ${this.people.identity(actor.id).identifier}`)
      .join(" ");
    return `${title} ${line} ${names}`.toLowerCase().includes(this.query);
  }

  /** (Re)build the "New conversation" form (the registry may have changed). */
  showCreateForm() {
    const registry = this.registry();
    const titleId = uniqueId("subject");
    const withId = uniqueId("with");
    const title = h("input", { id: titleId, type: "text", autocomplete: "off", placeholder: "Headphones for travel" });
    const others = h("input", {
      id: withId,
      type: "text",
      required: true,
      autocomplete: "off",
      spellcheck: "false",
      placeholder: "shop.near",
      "aria-describedby": `${withId}-hint`,
    });
    // the protocol's choices, for developers: what this app and the others read (all this app renders, by default)
    const mine = capabilityFields(registry, { legend: "Capabilities you read", checked: true });
    const theirs = capabilityFields(registry, { legend: "Capabilities they read", checked: false });
    const create = () => {
      const ids = others.value.split(/[\s,]+/).map((id) => id.trim()).filter(Boolean);
      const body = { actors: ids.map((id) => ({ id, capabilities: theirs.value() })) };
      if (title.value.trim()) body.metadata = { title: title.value.trim() };
      return this.createThread(body, mine.value());
    };
    const form = disclosureForm({
      summary: "New conversation",
      className: "new-thread",
      submitLabel: "Start conversation",
      children: [
        h("label", { for: withId }, "Who do you want to talk to?"),
        h("p", { id: `${withId}-hint`, class: "hint" }, "Their account name, as they gave it to you."),
        others,
        h("label", { for: titleId }, "Subject (optional)"),
        title,
        h(
          "details",
          { class: "developer-details" },
          h("summary", {}, "Developer options"),
          mine.element,
          theirs.element,
        ),
      ],
      action: create,
      done: () => this.showCreateForm(),
    });
    replaceChildren(this.formSlot, form);
  }
}

const previews = new WeakMap(); // message -> its line (the list is drawn again on every message)

/** One line for the list: the text as a reader sees it (no Markdown), or what a capability message asks. */
function preview(message) {
  if (!previews.has(message)) previews.set(message, previewOf(message));
  return previews.get(message);
}

function previewOf(message) {
  for (const part of partsOf(message)) {
    if (part.type !== "text") continue;
    const json = capabilityJson(part);
    // (a long text is cut before parsing: the list shows one line of it)
    if (json === null) return plainText(part.text.value.slice(0, 2000)).slice(0, 120);
    const type = part.aitp?.type ?? Object.keys(json).find((key) => key !== "$schema") ?? "message";
    const body = json[type];
    const title = body && typeof body === "object" ? body.title || body.description || null : null;
    return describeKind(type, typeof title === "string" ? title : null);
  }
  return "";
}
