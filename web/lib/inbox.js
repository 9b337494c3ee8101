/**
 * The actor inbox over one WebSocket: every event of every thread the key is in.
 *
 * Each event carries a `cursor` (its place in the store-wide log). The inbox keeps the last one and,
 * when the socket drops (1006), the server restarts (1012) or calls us a slow consumer (4008),
 * reconnects with `after=<cursor>` after a growing pause, so no event is lost; events at or below the
 * cursor are dropped, so none is delivered twice. 4401 (bad key) and 4403 are final.
 *
 * The key never goes in the socket's URL (where console errors and server logs would show it): each
 * connect first gets a one-time ticket (POST /v1/tickets, valid 30 s) and opens `?ticket=`.
 */

const FINAL = new Map([
  [4401, "The key was refused; sign in again."],
  [4403, "The server refused the inbox."],
]);
const BACKOFF_MS = [250, 500, 1000, 2000, 4000, 8000, 15000];

export class Inbox {
  /**
   * @param {object} options
   * @param {Function} options.api the API with the actor's key (for tickets)
   * @param {number} options.cursor resume after this cursor (0: from the start)
   * @param {(event: object) => void} options.onEvent each new event, in log order
   * @param {(frame: object) => void} [options.onActivity] frames outside the log (`thread.activity`: an agent
   *   working on an answer; no cursor, never replayed); given, the socket asks for them (`activity=true`)
   * @param {(status: {state: string, detail: string}) => void} options.onStatus connection changes
   */
  constructor({ api, cursor, onEvent, onActivity = null, onStatus }) {
    this.api = api;
    this.cursor = cursor;
    this.onEvent = onEvent;
    this.onActivity = onActivity;
    this.onStatus = onStatus;
    this.socket = null;
    this.attempt = 0;
    this.timer = null;
    this.stopped = false;
    this.online = () => this.#reconnectNow();
    window.addEventListener("online", this.online);
  }

  start() {
    this.stopped = false;
    this.#connect();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    window.removeEventListener("online", this.online);
    this.socket?.close(1000, "signed out");
    this.socket = null;
  }

  async #connect() {
    this.connecting = true;
    this.onStatus({ state: "connecting", detail: this.attempt ? "Reconnecting…" : "Connecting…" });
    let ticket;
    try {
      ticket = (await this.api("POST", "/tickets")).ticket;
    } catch (error) {
      this.connecting = false;
      if (this.stopped) return;
      if (error.status === 401) {
        this.onStatus({ state: "failed", detail: FINAL.get(4401), code: 4401, errorCode: error.code });
        return;
      }
      this.#scheduleReconnect();
      return;
    }
    this.connecting = false;
    if (this.stopped) return;
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const query = new URLSearchParams({ after: String(this.cursor), ticket });
    if (this.onActivity) query.set("activity", "true");
    const socket = new WebSocket(`${scheme}://${location.host}/v1/actors/me/events/ws?${query}`);
    this.socket = socket;
    socket.addEventListener("open", () => {
      if (socket !== this.socket) return;
      this.attempt = 0;
      this.onStatus({ state: "live", detail: "Live" });
    });
    socket.addEventListener("message", (message) => {
      if (socket !== this.socket) return;
      const event = JSON.parse(message.data);
      if (event.type === "thread.activity") {
        this.onActivity?.(event);
        return;
      }
      if (typeof event.cursor !== "number" || event.cursor <= this.cursor) return;
      this.cursor = event.cursor;
      this.onEvent(event);
    });
    socket.addEventListener("close", (close) => {
      if (socket !== this.socket || this.stopped) return;
      this.socket = null;
      if (FINAL.has(close.code)) {
        // the server's reason tells an expired key from a refused one (both close with 4401)
        const errorCode = close.code === 4401 && close.reason.includes("expired") ? "expired_api_key" : null;
        this.onStatus({ state: "failed", detail: FINAL.get(close.code), code: close.code, errorCode });
        return;
      }
      this.#scheduleReconnect();
    });
  }

  #scheduleReconnect() {
    const delay = BACKOFF_MS[Math.min(this.attempt, BACKOFF_MS.length - 1)];
    this.attempt += 1;
    const seconds = Math.max(1, Math.round(delay / 1000));
    const detail = navigator.onLine ? `Connection lost; retrying in ${seconds} s` : "Offline; waiting for the network";
    this.onStatus({ state: "offline", detail });
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.#connect(), delay);
  }

  /** The browser says the network is back: do not wait for the backoff timer. */
  #reconnectNow() {
    if (this.stopped || this.socket || this.connecting) return;
    clearTimeout(this.timer);
    this.#connect();
  }
}
