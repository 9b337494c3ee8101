/**
 * The embedded chat's key: a short-lived customer session that the page around it (a shop's website, through
 * web/embed.js) gets from the shop's own backend and posts in.
 *
 * The handshake: this frame posts `{"type": "aitp:ready"}` to its parent; the parent answers
 * `{"type": "aitp:session", "key", "expires_at"}` (or `{"type": "aitp:session-failed", "status"}` when the shop's
 * backend did not give one). Before the key expires, or when a call is answered 401, the frame posts
 * `{"type": "aitp:session-needed"}` and the parent answers again. Only messages from the parent window are taken,
 * and a customer's key lives in this object alone: never in a URL, never in storage.
 *
 * Visitors not signed in (the tag's `data-anonymous`, and the shop lets them in): when the shop's backend gives
 * no session (401 or 403, and the parent says `anonymous`), the frame asks aitp itself for a visitor's session
 * (POST /v1/customer_sessions/anonymous). That key is kept in this frame's sessionStorage (the browser keeps it
 * apart per top-level site: only the shop's pages see it), so the visitor's conversation outlives a page
 * change. Each `ready` and `session-needed` then carries it as `upgrade_from`: once the visitor signs in on the
 * shop's website, the shop's backend names it when it asks for the customer's session, and the visitor's
 * conversations become the customer's. (The parent is one of the shop's own sites: the server lets no other
 * frame this page, `services.embed_origins`.) The page may also say its customer signed in without leaving
 * (`document.dispatchEvent(new Event("aitp:signed-in"))` to embed.js, which posts `{"type": "aitp:renew"}`).
 */

const RENEW_WAIT_MS = 15000; // how long a renewal may take before the call that asked for it gives up
const EARLIEST_RENEWAL_S = 30; // a clock far off the server's must not make the frame ask again and again

/** A refusal of the shop's backend (its HTTP status; 0: it did not answer) or no answer at all (status null). */
export class SessionError extends Error {
  constructor(status, anonymous = false) {
    super(status === null ? "The page did not answer." : `The page's session route answered ${status}.`);
    this.name = "SessionError";
    this.status = status;
    this.anonymous = anonymous; // the page lets visitors not signed in chat (its tag's `data-anonymous`)
  }
}

const VISITOR = "aitp.visitor."; // + shop id: a visitor's key and its expiry, in sessionStorage

export class ParentSession {
  constructor(shop) {
    this.shop = shop;
    this.visitor = false; // the key is a visitor's (not signed in), not a customer's
    this.onUpgraded = null; // called when a visitor's key gives way to a customer's (the chat starts again)
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
    this.#post({ type: "aitp:ready", ...this.#upgradeFrom() });
    return first;
  }

  /** A visitor's session from aitp itself (the shop's backend gave none and the page lets visitors chat): the
   * one this tab holds for the shop while it lasts, else a new one; rejects with the server's refusal (403: the
   * shop does not let visitors in). */
  async visit(api) {
    const held = this.#heldVisitor();
    const session = held ?? (await api("POST", "/customer_sessions/anonymous", { shop: this.shop }));
    if (!held) sessionStorage.setItem(VISITOR + this.shop, JSON.stringify([session.key, session.expires_at]));
    this.visitor = true;
    this.key = session.key;
    this.expiresAt = session.expires_at;
    this.#scheduleRenewal();
    return session.key;
  }

  /** Ask the parent for a new key (one request at a time); resolves once it is here. */
  renew() {
    if (!this.renewing) {
      this.renewing = this.#next(RENEW_WAIT_MS).finally(() => {
        this.renewing = null;
      });
      this.#post({ type: "aitp:session-needed", ...this.#upgradeFrom() });
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

  /** `{upgrade_from}`: the visitor's key this tab holds for the shop (to become the signed-in customer's), or {}. */
  #upgradeFrom() {
    const held = this.#heldVisitor();
    return held ? { upgrade_from: held.key } : {};
  }

  #heldVisitor() {
    try {
      const [key, expiresAt] = JSON.parse(sessionStorage.getItem(VISITOR + this.shop) ?? "null") ?? [];
      if (typeof key === "string" && expiresAt > Date.now() / 1000 + 60) return { key, expires_at: expiresAt };
    } catch {
      // storage refused (a browser that blocks it in frames), or not ours: no visitor to resume
    }
    return null;
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
      const wasVisitor = this.visitor;
      this.visitor = false;
      // a customer's session now: what the visitor had is the customer's (the shop named it in its request)
      sessionStorage.removeItem(VISITOR + this.shop);
      this.key = data.key;
      this.expiresAt = data.expires_at;
      this.#scheduleRenewal();
      this.#settle(null, null, data.key);
      if (wasVisitor) this.onUpgraded?.();
    } else if (data.type === "aitp:session-failed") {
      this.parentOrigin = event.origin;
      this.#settle(null, new SessionError(typeof data.status === "number" ? data.status : 0, data.anonymous === true));
    } else if (data.type === "aitp:renew" && this.parentOrigin) {
      this.renew().catch(() => {}); // the page's customer signed in: a visitor becomes that customer
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
