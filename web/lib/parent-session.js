/**
 * The embedded chat's key: a short-lived customer session that the page around it (a shop's website, through
 * web/embed.js) gets from the shop's own backend and posts in.
 *
 * The handshake: this frame posts `{"type": "aitp:ready"}` to its parent; the parent answers
 * `{"type": "aitp:session", "key", "expires_at"}` (or `{"type": "aitp:session-failed", "status"}` when the shop's
 * backend did not give one). Before the key expires, or when a call is answered 401, the frame posts
 * `{"type": "aitp:session-needed"}` and the parent answers again. Only messages from the parent window are taken,
 * and the key lives in this object alone: never in a URL, never in storage.
 */

const RENEW_WAIT_MS = 15000; // how long a renewal may take before the call that asked for it gives up
const EARLIEST_RENEWAL_S = 30; // a clock far off the server's must not make the frame ask again and again

/** A refusal of the shop's backend (its HTTP status; 0: it did not answer) or no answer at all (status null). */
export class SessionError extends Error {
  constructor(status) {
    super(status === null ? "The page did not answer." : `The page's session route answered ${status}.`);
    this.name = "SessionError";
    this.status = status;
  }
}

export class ParentSession {
  constructor() {
    this.key = null;
    this.expiresAt = null;
    this.parentOrigin = null; // known from the first answer: later messages go to it alone
    this.waiters = [];
    this.renewing = null;
    this.timer = null;
    this.listener = (event) => this.#receive(event);
  }

  /** Whether there is a page around this frame to ask (opened on its own, there is none). */
  static framed() {
    return window.parent !== window;
  }

  /** Say to the parent that the chat is ready for a key; resolves with the first key, or rejects after `waitMs`. */
  start(waitMs) {
    window.addEventListener("message", this.listener);
    const first = this.#next(waitMs);
    this.#post({ type: "aitp:ready" });
    return first;
  }

  /** Ask the parent for a new key (one request at a time); resolves once it is here. */
  renew() {
    if (!this.renewing) {
      this.renewing = this.#next(RENEW_WAIT_MS).finally(() => {
        this.renewing = null;
      });
      this.#post({ type: "aitp:session-needed" });
    }
    return this.renewing;
  }

  /** Tell the parent something that is not a request for a key (e.g. the chat's title), once its origin is known. */
  tell(message) {
    if (this.parentOrigin) this.#post(message);
  }

  stop() {
    clearTimeout(this.timer);
    window.removeEventListener("message", this.listener);
  }

  /** The next key the parent posts, however late (after `start` gave up waiting for the first). */
  next() {
    return this.#next(null);
  }

  #next(waitMs) {
    return new Promise((resolve, reject) => {
      const waiter = { resolve, reject };
      if (waitMs !== null) waiter.timer = setTimeout(() => this.#settle(waiter, new SessionError(null)), waitMs);
      this.waiters.push(waiter);
    });
  }

  #settle(only, error, key) {
    const settled = only ? [only] : this.waiters;
    this.waiters = this.waiters.filter((waiter) => !settled.includes(waiter));
    for (const waiter of settled) {
      clearTimeout(waiter.timer);
      if (error) waiter.reject(error);
      else waiter.resolve(key);
    }
  }

  #post(message) {
    // "aitp:ready" goes out before the parent's origin is known; it carries nothing secret
    window.parent.postMessage(message, this.parentOrigin ?? "*");
  }

  #receive(event) {
    if (event.source !== window.parent || !ParentSession.framed()) return;
    const data = event.data;
    if (!data || typeof data !== "object") return;
    if (data.type === "aitp:session") {
      if (typeof data.key !== "string" || !data.key || typeof data.expires_at !== "number") return;
      this.parentOrigin = event.origin;
      this.key = data.key;
      this.expiresAt = data.expires_at;
      this.#scheduleRenewal();
      this.#settle(null, null, data.key);
    } else if (data.type === "aitp:session-failed") {
      this.parentOrigin = event.origin;
      this.#settle(null, new SessionError(typeof data.status === "number" ? data.status : 0));
    }
  }

  /** Ask for the next key a little before this one expires: a quarter of its life early, 10 s to 2 min. */
  #scheduleRenewal() {
    clearTimeout(this.timer);
    const left = this.expiresAt - Date.now() / 1000;
    const early = Math.min(120, Math.max(10, left / 4));
    const delay = Math.max(EARLIEST_RENEWAL_S, left - early);
    this.timer = setTimeout(() => this.renew().catch(() => {}), delay * 1000);
  }
}
