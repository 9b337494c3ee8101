/**
 * Presence in the open conversation: whether the business's agent can be reached now ("Online · usually replies
 * in about 2 minutes", "Away: replies may take a while") and "<name> is typing…" while it works on an answer.
 *
 * Its API (the main app and the embedded chat use it the same way):
 *
 *   import { Presence, presenceElements } from "./lib/presence.js";
 *   const presence = new Presence(presenceElements(namesElement, composerElement), { api, name });
 *   presence.open(thread, me);   // a conversation is shown: `thread` as GET /v1/threads/{id} answers it, `me` the
 *                                // actor the page speaks as; its agent's presence is read now, every 30 s, and
 *                                // soon after an agent shown away starts working
 *   presence.handleEvent(frame); // every inbox frame: `thread.activity` frames (the inbox opened with
 *                                // `activity=true`) and the agent's `thread.message.created` (ends its typing)
 *   presence.close();            // no conversation shown (and when the page signs out)
 *
 * `presenceElements(names, before)` makes (once) the two elements it draws in: a line at the end of `names` (the
 * conversation head's block of names) and a polite live region inserted before `before` (what follows the
 * messages: the composer). Any other two elements do as well: `{status, typing}`. `api(method, path)` is
 * lib/api.js's; `name(actorId)` gives the name shown for an actor (lib/people.js's `name`).
 *
 * The agent of a thread is its first actor other than `me` that speaks as an assistant, else its first other actor
 * (a thread the shop opened makes the shop its creator, who speaks as a person). The typing line keeps its height when empty (styles.css, "presence"): showing it moves nothing.
 * An activity ends when its frame says `idle` (sent at its end, or after the agent's message), at the agent's
 * message, or when it expires by the page's own clock (a little late, in case the clocks differ).
 */

const REFRESH_MS = 30_000;
const GRACE_MS = 2_000; // past `expires_at`, before the page ends a typing line the server did not
const MAX_TYPING_MS = 62_000; // an activity holds a minute at most
const RECHECK_MS = 2_000; // an agent shown away that starts working: its presence read again, at most this often

/** The elements the presence draws in: made once inside `names` and before `before`, then found again. */
export function presenceElements(names, before) {
  let status = names.querySelector(":scope > .presence-line");
  if (!status) {
    status = document.createElement("p");
    status.className = "hint presence-line";
    status.hidden = true;
    names.append(status);
  }
  let typing = before.parentElement.querySelector(":scope > .typing-line");
  if (!typing) {
    typing = document.createElement("p");
    typing.className = "typing-line";
    typing.setAttribute("role", "status"); // polite: announced when the user is idle, never interrupting
    before.before(typing);
  }
  return { status, typing };
}

/** "under a minute", "about 2 minutes", "about 3 hours", "about a day". */
export function replyTime(seconds) {
  if (seconds < 60) return "under a minute";
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return minutes === 1 ? "about a minute" : `about ${minutes} minutes`;
  const hours = Math.round(seconds / 3600);
  if (hours < 24) return hours === 1 ? "about an hour" : `about ${hours} hours`;
  const days = Math.round(seconds / 86400);
  return days === 1 ? "about a day" : `about ${days} days`;
}

export class Presence {
  /**
   * @param {{status: HTMLElement, typing: HTMLElement}} elements
   * @param {{api: Function, name: (actorId: string) => string}} options
   */
  constructor({ status, typing }, { api, name }) {
    this.status = status;
    this.typing = typing;
    this.api = api;
    this.name = name;
    this.threadId = null;
    this.agent = null;
    this.working = new Map(); // actor id -> timer ending its typing line
    this.timer = null;
    this.checkedAt = 0;
    this.generation = 0; // bumped by each open/close: a late answer for another conversation is dropped
    this.onVisible = () => {
      if (document.visibilityState === "visible" && this.agent) this.#refresh();
    };
    document.addEventListener("visibilitychange", this.onVisible);
  }

  /** Show the presence of the agent of `thread` (the page speaking as `me`). */
  open(thread, me) {
    const agent = agentOf(thread, me);
    if (thread.id === this.threadId && agent === this.agent) return;
    const sameThread = thread.id === this.threadId;
    this.close({ keepTyping: sameThread });
    this.threadId = thread.id;
    this.agent = agent;
    if (!agent) return;
    this.status.hidden = false;
    this.status.dataset.state = "checking";
    this.status.textContent = "\u00a0"; // its line's height, until the answer comes
    this.#refresh();
  }

  close({ keepTyping = false } = {}) {
    this.generation += 1;
    clearTimeout(this.timer);
    this.timer = null;
    this.threadId = null;
    this.agent = null;
    this.status.hidden = true;
    this.status.textContent = "";
    delete this.status.dataset.state;
    if (!keepTyping) {
      for (const timer of this.working.values()) clearTimeout(timer);
      this.working.clear();
      this.#renderTyping();
    }
  }

  /** Stop for good (the page signs out). */
  stop() {
    this.close();
    document.removeEventListener("visibilitychange", this.onVisible);
  }

  /** An inbox frame: `thread.activity` of the open conversation, or a message that ends its author's typing. */
  handleEvent(frame) {
    if (!this.threadId || frame.thread_id !== this.threadId) return;
    if (frame.type === "thread.activity") {
      const { actor, state, expires_at: expiresAt } = frame.data;
      if (state !== "working") {
        this.#endTyping(actor);
        return;
      }
      this.#startTyping(actor, expiresAt);
      // working, so reachable: the line may say "Away" from before the agent connected
      if (actor === this.agent && this.status.dataset.state === "away") this.#recheck();
    } else if (frame.type === "thread.message.created") {
      this.#endTyping(frame.data?.metadata?.actor);
    }
  }

  /** Read the presence again soon: now, or `RECHECK_MS` after the last read. */
  #recheck() {
    const wait = this.checkedAt + RECHECK_MS - Date.now();
    if (wait <= 0) {
      this.#refresh();
      return;
    }
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.#refresh(), wait);
  }

  async #refresh() {
    const generation = this.generation;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.#refresh(), REFRESH_MS);
    if (document.visibilityState === "hidden") return; // read again when the page is looked at
    this.checkedAt = Date.now();
    let presence;
    try {
      presence = await this.api("GET", `/actors/${encodeURIComponent(this.agent)}/presence`);
    } catch (error) {
      if (generation !== this.generation) return;
      if (error.status === 404) this.status.hidden = true; // not ours to see
      return; // anything else: what the line says stays until the next read
    }
    if (generation !== this.generation) return;
    this.status.dataset.state = presence.reachable ? "online" : "away";
    if (presence.reachable) {
      const usually = presence.usually_replies_in;
      this.status.textContent = usually === null ? "Online" : `Online · usually replies in ${replyTime(usually)}`;
    } else {
      this.status.textContent = "Away: replies may take a while";
    }
  }

  #startTyping(actor, expiresAt) {
    clearTimeout(this.working.get(actor));
    const left = expiresAt * 1000 - Date.now() + GRACE_MS;
    const timer = setTimeout(() => this.#endTyping(actor), Math.min(Math.max(left, GRACE_MS), MAX_TYPING_MS));
    this.working.set(actor, timer);
    this.#renderTyping();
  }

  #endTyping(actor) {
    if (!this.working.has(actor)) return;
    clearTimeout(this.working.get(actor));
    this.working.delete(actor);
    this.#renderTyping();
  }

  #renderTyping() {
    const names = [...this.working.keys()].map((actor) => this.name(actor));
    let text = "";
    if (names.length === 1) text = `${names[0]} is typing…`;
    else if (names.length === 2) text = `${names[0]} and ${names[1]} are typing…`;
    else if (names.length > 2) text = `${names.length} people are typing…`;
    if (this.typing.textContent !== text) this.typing.textContent = text;
    this.typing.dataset.active = String(names.length > 0);
  }
}

/** Who a conversation is with: its first assistant other than `me`, else its first other actor. */
function agentOf(thread, me) {
  const others = (thread?.actors ?? []).filter((actor) => actor.id !== me);
  return (others.find((actor) => actor.role === "assistant") ?? others[0])?.id ?? null;
}
