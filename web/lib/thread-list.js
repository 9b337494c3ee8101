/**
 * The thread list (live) and the "New thread" form, in the <nav>.
 *
 * Threads are kept by id, most recent activity first; each is a link to `#thread=<id>`, so opening
 * one is ordinary keyboard navigation and the address names the open thread.
 */

import { actorFields, capabilityFields } from "./actor-fields.js";
import { disclosureForm } from "./disclosure-form.js";
import { h, replaceChildren } from "./dom.js";
import { formatTime } from "./format.js";
import { capabilityJson, partsOf } from "./message-view.js";

/** A thread's display name: its `metadata.title`, else the other actors, else its id. */
export function threadTitle(thread, me) {
  if (thread.metadata?.title) return thread.metadata.title;
  const others = thread.actors.map((actor) => actor.id).filter((id) => id !== me);
  return others.length ? others.join(", ") : `Thread ${thread.id.slice(-6)}`;
}

export class ThreadList {
  /**
   * @param {HTMLElement} root the <nav>
   * @param {{registry: () => object[], me: () => string|null, createThread: (body: object, mine: string[]) => Promise<object>}} options
   */
  constructor(root, { registry, me, createThread }) {
    this.root = root;
    this.registry = registry;
    this.me = me;
    this.createThread = createThread;
    this.threads = new Map(); // id -> {thread, activity, preview, fresh}
    this.openId = null;
    this.list = h("ul", { class: "thread-list", id: "thread-list" });
    this.empty = h("p", { class: "hint empty" }, "No threads yet. Start one, or wait for an agent to add you.");
    this.formSlot = h("div");
    replaceChildren(
      root,
      h("h2", { id: "threads-heading" }, "Threads"),
      this.formSlot,
      this.empty,
      this.list,
    );
    this.list.setAttribute("aria-labelledby", "threads-heading");
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
      this.threads.set(thread.id, { thread, activity, preview: "", fresh: false });
    }
    this.render();
  }

  remove(id) {
    if (this.threads.delete(id)) this.render();
  }

  /** A message arrived in thread `id`: move it up and show a preview (and a dot unless it is open). */
  touch(id, message, { live }) {
    const entry = this.threads.get(id);
    if (!entry) return;
    entry.activity = Math.max(entry.activity, message.created_at);
    entry.preview = preview(message);
    if (live && id !== this.openId && message.metadata?.actor !== this.me()) entry.fresh = true;
    this.render();
  }

  setOpen(id) {
    this.openId = id;
    const entry = this.threads.get(id);
    if (entry) entry.fresh = false;
    this.render();
  }

  render() {
    const entries = [...this.threads.values()].sort((a, b) => b.activity - a.activity || (a.thread.id < b.thread.id ? 1 : -1));
    this.empty.hidden = entries.length > 0;
    const me = this.me();
    replaceChildren(
      this.list,
      entries.map(({ thread, activity, preview: text, fresh }) =>
        h(
          "li",
          { dataset: { threadId: thread.id } },
          h(
            "a",
            {
              href: `#thread=${encodeURIComponent(thread.id)}`,
              class: fresh ? "thread-link fresh" : "thread-link",
              "aria-current": thread.id === this.openId ? "page" : null,
            },
            h(
              "span",
              { class: "thread-line" },
              h("span", { class: "thread-title" }, threadTitle(thread, me)),
              h("time", { class: "thread-time" }, formatTime(activity)),
            ),
            h("span", { class: "thread-preview" }, text || `${thread.actors.length} actors`),
            fresh && h("span", { class: "visually-hidden" }, " (new messages)"),
          ),
        ),
      ),
    );
  }

  /** (Re)build the "New thread" form (the registry may have changed). */
  showCreateForm() {
    const registry = this.registry();
    const titleId = "new-thread-title";
    const title = h("input", { id: titleId, type: "text", autocomplete: "off", placeholder: "Socks for the winter" });
    const mine = capabilityFields(registry, { legend: "Capabilities you read", checked: true });
    const actorRows = h("div", { class: "actor-rows" });
    const rows = [];
    const addRow = () => {
      const row = actorFields(registry, {
        legend: `Actor ${rows.length + 1}`,
        removable: () => {
          rows.splice(rows.indexOf(row), 1);
          row.element.remove();
          addButton.focus();
        },
      });
      rows.push(row);
      actorRows.append(row.element);
      row.focus();
    };
    const addButton = h("button", { type: "button", class: "secondary", onclick: addRow }, "Add an actor");
    const create = () => {
      const body = { actors: rows.map((row) => row.value()).filter((actor) => actor.id) };
      if (title.value.trim()) body.metadata = { title: title.value.trim() };
      return this.createThread(body, mine.value());
    };
    const form = disclosureForm({
      summary: "New thread",
      className: "new-thread",
      submitLabel: "Create thread",
      children: [h("label", { for: titleId }, "Title (optional)"), title, mine.element, actorRows, addButton],
      action: create,
      done: () => this.showCreateForm(),
    });
    replaceChildren(this.formSlot, form);
  }
}

/** One line for the list: the text, or the kind of capability message. */
function preview(message) {
  for (const part of partsOf(message)) {
    if (part.type !== "text") continue;
    const json = capabilityJson(part);
    if (json === null) return part.text.value.slice(0, 120);
    const type = part.aitp?.type ?? Object.keys(json).find((key) => key !== "$schema") ?? "message";
    return type.replaceAll("_", " ");
  }
  return "";
}
