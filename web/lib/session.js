/**
 * The signed-in key and the address fragment.
 *
 * `#code=<one-time code>&thread=<id>` signs in (the link `aitp serve` prints, or one made with POST
 * /v1/sign-in-codes): the code is exchanged once for a key of its own (POST /v1/sign-in), which lives in
 * sessionStorage; the code leaves the address bar at once. No key is ever put in a URL. Once signed in,
 * `#thread=<id>` names the open thread.
 */

const KEY = "aitp.key";
const CURSOR = "aitp.cursor.";

/** The fragment's `code`, `thread`, `message` (a search result: the message to show) and (from old links, never
 * used) `key`; each may be null. */
export function readFragment() {
  const params = new URLSearchParams(location.hash.replace(/^#/, ""));
  return { code: params.get("code"), thread: params.get("thread"), message: params.get("message"), key: params.get("key") };
}

/** Show `#thread=<id>` (or nothing) in the address bar without adding a history entry per click. */
export function writeFragment(thread) {
  const hash = thread ? `#thread=${encodeURIComponent(thread)}` : "";
  history.replaceState(null, "", `${location.pathname}${location.search}${hash}`);
}

export function storedKey() {
  return sessionStorage.getItem(KEY);
}

export function storeKey(key) {
  sessionStorage.setItem(KEY, key);
}

export function forgetKey() {
  const key = storedKey();
  sessionStorage.removeItem(KEY);
  if (key) sessionStorage.removeItem(CURSOR + key.slice(-12));
}

/** The last inbox cursor seen with this key (so a reload resumes instead of replaying), or null. */
export function storedCursor(key) {
  const stored = sessionStorage.getItem(CURSOR + key.slice(-12));
  return stored === null ? null : Number(stored);
}

export function storeCursor(key, cursor) {
  sessionStorage.setItem(CURSOR + key.slice(-12), String(cursor));
}
