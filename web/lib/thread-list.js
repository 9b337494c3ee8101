/**
 * The list of conversations (live) with search, and the "New conversation" form, in the <nav>.
 *
 * Threads are kept by id, most recent activity first; each is a link to `#thread=<id>`, so opening one is
 * ordinary keyboard navigation and the address names the open thread. Each shows who is in it, the last
 * message and who sent it, and whether it has messages the user has not seen (remembered per browser).
 * The heading, "New conversation" and search stay at the top however long the list grows.
 *
 * Search: typing filters the list at once by what it shows (names, ids, the last message); a moment later the
 * server's full-text search of every message of the user's conversations (GET /v1/threads/search) adds the
 * conversations it finds, each with an excerpt of the message that matched, the words marked.
 *
 * "New conversation" takes only actors the server knows: each id is looked up (GET /v1/actors/{id}) as it is
 * entered, an unknown one is named at the field, and the form refuses to start a conversation with it (as the
 * server does, whose refusal is shown at the field too).
 */

import { capabilityFields } from "./actor-fields.js";
import { disclosureForm } from "./disclosure-form.js";
import { h, replaceChildren, uniqueId } from "./dom.js";
import { formatTime } from "./format.js";
import { plainText } from "./markdown.js";
import { capabilityJson, partsOf } from "./message-view.js";
import { describeKind, sentenceFor } from "./plain-words.js";

const SEARCH_DELAY = 250; // ms after the last key before the server is asked
const CHECK_DELAY = 500; // ms after the last key before the ids entered are looked up
// what the server searches at most (services/search.py): the first words of a longer query
const MAX_SEARCH_WORDS = 8;
const MAX_SEARCH_CHARS = 200;
const WORD = /[\p{L}\p{N}]+/gu;

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
   *          createThread: (body: object, mine: string[]) => Promise<object>, api?: Function}} options
   */
  constructor(root, { registry, me, people, createThread, api = null }) {
    this.root = root;
    this.registry = registry;
    this.me = me;
    this.people = people;
    this.createThread = createThread;
    this.api = api ?? people.api; // (the app's API, which the people are read through)
    this.threads = new Map(); // id -> {thread, activity, last, unread}
    this.openId = null;
    this.query = "";
    this.found = null; // the server's search for the query: thread id -> {thread, message}; null while none
    this.searching = false;
    this.searchTurn = 0; // answers to an earlier query are dropped
    this.searchTimer = null;
    this.known = new Map(); // actor id -> Promise<boolean|null> (null: could not tell, asked again next time)
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
        this.#searchMessages(this.search.value);
        this.render();
      },
    });
    // what the server's search found, said to screen readers once it answers
    this.searchStatus = h("p", { class: "visually-hidden", role: "status" });
    replaceChildren(
      root,
      h(
        "div",
        { class: "threads-head" },
        h("h2", { id: "threads-heading" }, "Conversations"),
        this.formSlot,
        h("label", { for: searchId, class: "visually-hidden" }, "Search conversations"),
        this.search,
        this.searchStatus,
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
    const found = this.query ? this.found : null;
    if (found) {
      // after what the list shows matches: the conversations only the words of their messages match
      const listed = new Set(shown.map(({ entry }) => entry.thread.id));
      for (const [id, result] of found) {
        if (listed.has(id)) continue;
        const entry = this.threads.get(id) ?? { thread: result.thread, activity: result.message.created_at, last: null };
        shown.push({ entry, title: threadTitle(entry.thread, me, this.people), line: "" });
      }
    }
    this.empty.hidden = entries.length > 0;
    this.noMatch.hidden = entries.length === 0 || shown.length > 0 || this.searching;
    replaceChildren(
      this.list,
      shown.map(({ entry, title, line }) => {
        const { thread, activity, unread } = entry;
        const others = thread.actors.map((actor) => actor.id).filter((id) => id !== me);
        const other = others[0] ?? me;
        const match = found?.get(thread.id) ?? null;
        return h(
          "li",
          { dataset: { threadId: thread.id, ...(match ? { matchedMessage: match.message.id } : {}) } },
          h(
            "a",
            {
              // a search result opens at the message it found
              href: match
                ? `#thread=${encodeURIComponent(thread.id)}&message=${encodeURIComponent(match.message.id)}`
                : `#thread=${encodeURIComponent(thread.id)}`,
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
                h("time", { class: "thread-time" }, formatTime(match ? match.message.created_at : activity)),
              ),
              h(
                "span",
                { class: "thread-meta" },
                // who the conversation is with, as checked (the avatar and the name alone prove nothing);
                // on a line of its own with the preview, so the title keeps the width it needs
                others.length === 1 && this.#badge(others[0], title),
                match
                  ? h("span", { class: "thread-preview thread-snippet" }, this.#snippet(match.message, me))
                  : h("span", { class: "thread-preview" }, line),
              ),
            ),
            unread && h("span", { class: "visually-hidden" }, " (unread)"),
          ),
        );
      }),
    );
  }

  /**
   * Ask the server which conversations have messages with every word of `query` (a moment after the last key;
   * the answer to an earlier query is dropped). The list shows what it finds beside its own matches.
   */
  #searchMessages(query) {
    clearTimeout(this.searchTimer);
    const turn = ++this.searchTurn;
    this.found = null; // an earlier query's: not shown under this one
    const words = [...new Set(query.slice(0, MAX_SEARCH_CHARS).match(WORD) ?? [])].slice(0, MAX_SEARCH_WORDS);
    if (!words.length) {
      this.searching = false;
      this.searchStatus.textContent = "";
      return;
    }
    this.searching = true;
    this.searchTimer = setTimeout(async () => {
      let found = new Map();
      try {
        const params = new URLSearchParams({ q: words.join(" "), limit: "20" });
        const results = await this.api("GET", `/threads/search?${params}`);
        found = new Map(results.data.map((result) => [result.thread.id, result]));
      } catch (error) {
        console.warn("Could not search the messages", error); // the list's own matches stay
      }
      if (turn !== this.searchTurn) return;
      this.found = found;
      this.searching = false;
      this.render();
      const count = this.list.children.length;
      this.searchStatus.textContent =
        count === 0 ? "No conversation matches your search." : `${count} conversation${count === 1 ? "" : "s"} found.`;
    }, SEARCH_DELAY);
  }

  /** "Headphone Shop: …the red socks are…", the words searched for marked. */
  #snippet(message, me) {
    const who = message.actor === me ? "You" : this.people.name(message.actor);
    return [`${who}: `, ...marked(message.snippet, new Set((this.query.match(WORD) ?? []).map(fold)))];
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

  /**
   * Whether the server knows actor `id` (GET /v1/actors/{id}: 404 when it does not); null when it could not
   * tell (busy, unreachable), then asked again next time. Each id is asked once while typing; Start asks again.
   */
  #isKnown(id) {
    if (id === this.me()) return Promise.resolve(true);
    if (!this.known.has(id)) {
      const asking = this.api("GET", `/actors/${encodeURIComponent(id)}`)
        .then((identity) => identity?.id === id) // ("me" answers with the caller's own identity)
        .catch((error) => {
          if (error.status === 404) return false;
          this.known.delete(id);
          return null;
        });
      this.known.set(id, asking);
    }
    return this.known.get(id);
  }

  /** The ids of `ids` the server does not know (those it could not tell about are left to the server). */
  async #unknown(ids) {
    const known = await Promise.all(ids.map((id) => this.#isKnown(id)));
    return ids.filter((_, index) => known[index] === false);
  }

  /** (Re)build the "New conversation" form (the registry may have changed). */
  showCreateForm() {
    const registry = this.registry();
    const titleId = uniqueId("subject");
    const withId = uniqueId("with");
    const title = h("input", { id: titleId, type: "text", autocomplete: "off", placeholder: "Headphones for travel" });
    const problem = h("p", { id: `${withId}-error`, class: "alert", hidden: true });
    const others = h("input", {
      id: withId,
      type: "text",
      required: true,
      autocomplete: "off",
      spellcheck: "false",
      placeholder: "shop.near",
      "aria-describedby": `${withId}-hint`,
    });
    const idsOf = () => [...new Set(others.value.split(/[\s,]+/).map((id) => id.trim()).filter(Boolean))];
    // what is wrong with the ids, at the field: its description, so a screen reader reads it with the field
    const showProblem = (unknown) => {
      const sentence = unknownSentence(unknown);
      problem.textContent = sentence ?? "";
      problem.hidden = !sentence;
      if (sentence) others.setAttribute("aria-invalid", "true");
      else others.removeAttribute("aria-invalid");
      others.setAttribute("aria-describedby", sentence ? `${problem.id} ${withId}-hint` : `${withId}-hint`);
    };
    // each id looked up as it is entered: a moment after the last key, and when the field is left
    let checking = 0;
    let timer = null;
    const check = async () => {
      clearTimeout(timer);
      const turn = ++checking;
      const unknown = await this.#unknown(idsOf());
      if (turn === checking) showProblem(unknown); // not an earlier value's answer
      return unknown;
    };
    others.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(check, CHECK_DELAY);
    });
    others.addEventListener("change", check);
    // the protocol's choices, for developers: what this app and the others read (all this app renders, by default)
    const mine = capabilityFields(registry, { legend: "Capabilities you read", checked: true });
    const theirs = capabilityFields(registry, { legend: "Capabilities they read", checked: false });
    const create = async () => {
      const ids = idsOf();
      for (const id of ids) this.known.delete(id); // asked again: one may have become known since
      const unknown = await check();
      if (unknown.length) {
        others.focus();
        // the form's alert says what the server's refusal would (the field says which id)
        throw new Error(sentenceFor({ status: 400, code: "unknown_actor" }));
      }
      const body = { actors: ids.map((id) => ({ id, capabilities: theirs.value() })) };
      if (title.value.trim()) body.metadata = { title: title.value.trim() };
      try {
        return await this.createThread(body, mine.value());
      } catch (error) {
        // the server knows no such actor (created since the look-up said otherwise, or not looked up): at the field
        const refused = error?.code === "unknown_actor" ? refusedId(error, ids, this.me()) : null;
        if (refused) {
          this.known.set(refused, Promise.resolve(false));
          showProblem([refused]);
          others.focus();
        }
        throw error;
      }
    };
    const form = disclosureForm({
      summary: "New conversation",
      className: "new-thread",
      submitLabel: "Start conversation",
      children: [
        h("label", { for: withId }, "Who do you want to talk to?"),
        h("p", { id: `${withId}-hint`, class: "hint" }, "Their account name, as they gave it to you."),
        others,
        problem,
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

/** "No one with the id 'x' is known here." for the unknown ids, or null for none. */
function unknownSentence(unknown) {
  if (!unknown.length) return null;
  const quoted = unknown.map((id) => `'${id}'`);
  if (quoted.length === 1) return `No one with the id ${quoted[0]} is known here.`;
  return `No one with the ids ${quoted.slice(0, -1).join(", ")} and ${quoted.at(-1)} is known here.`;
}

/**
 * The id a 400 `unknown_actor` refused: the actor its `param` names (`actors[i].id` of the request, which lists
 * me first, then the others in the order entered), else the one its message quotes.
 */
function refusedId(error, ids, me) {
  const index = /^actors\[(\d+)\]/.exec(error.param ?? "");
  const sent = [me, ...ids.filter((id) => id !== me)];
  if (index && sent[Number(index[1])] && sent[Number(index[1])] !== me) return sent[Number(index[1])];
  const quoted = /'([^']+)'/.exec(error.message ?? "");
  return quoted && ids.includes(quoted[1]) ? quoted[1] : null;
}

/** A word as the server compares it: accents dropped, lower case. */
function fold(word) {
  return word.normalize("NFKD").replace(/\p{M}/gu, "").toLowerCase();
}

/** `text` as nodes, each of its words that is one of `words` (folded) in a <mark>. */
function marked(text, words) {
  const nodes = [];
  let at = 0;
  for (const word of text.matchAll(WORD)) {
    if (!words.has(fold(word[0]))) continue;
    nodes.push(text.slice(at, word.index), h("mark", {}, word[0]));
    at = word.index + word[0].length;
  }
  nodes.push(text.slice(at));
  return nodes;
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
