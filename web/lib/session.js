/**
 * The signed-in key and the address fragment.
 *
 * `#key=<key>&thread=<id>` signs in (the link `aitp serve` prints); the key then moves into
 * sessionStorage and leaves the address bar, so it is neither bookmarked nor shared by accident.
 * Once signed in, `#thread=<id>` names the open thread.
 */

const KEY = "aitp.key";
const CURSOR = "aitp.cursor.";

/** The fragment's `key` and `thread` (either may be null). */
export function readFragment() {
  const params = new URLSearchParams(location.hash.replace(/^#/, ""));
  return { key: params.get("key"), thread: params.get("thread") };
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
