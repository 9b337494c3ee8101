/**
 * The /v1 HTTP API with one actor key. Every failure rejects with an `ApiError` carrying the
 * server's error envelope ({"error": {"message", "type", "param", "code"}}) and the HTTP status.
 */

/** The window event sent whenever the server answers (any status). */
export const REACHABLE = "aitp-reachable";

export class ApiError extends Error {
  constructor(status, envelope) {
    const error = envelope?.error ?? {};
    super(error.message || `The server answered ${status}.`);
    this.name = "ApiError";
    this.status = status;
    this.type = error.type ?? null;
    this.code = error.code ?? null;
    this.param = error.param ?? null;
  }
}

/**
 * `api(method, path, body?)`: call `/v1<path>` with `key` (none: a call that needs no key); resolves to the
 * JSON body.
 *
 * `key` may also be a function giving the key of the moment, and `renew` a function that gets a new one (the
 * embedded chat's short-lived customer session): a call answered 401 then waits for `renew()` and is made once
 * more with the new key. A 401 comes before anything is done, so the second try cannot do a thing twice.
 */
export function createApi(key, { renew = null } = {}) {
  const keyNow = typeof key === "function" ? key : () => key;
  return async function api(method, path, body) {
    try {
      return await call(keyNow(), method, path, body);
    } catch (error) {
      if (!renew || error.status !== 401) throw error;
      try {
        await renew();
      } catch {
        throw error; // no new key came: the refusal stands
      }
      return call(keyNow(), method, path, body);
    }
  };
}

/** One HTTP call with `key`: the JSON body, or an `ApiError`. */
async function call(key, method, path, body) {
  const headers = key ? { Authorization: `Bearer ${key}` } : {};
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(`/v1${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (cause) {
    // fetch only rejects when no answer came back at all
    throw new ApiError(0, { error: { message: "The server cannot be reached; check your connection.", code: "network_error" } });
  }
  const text = await response.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  // an answer came back: whatever said the server cannot be reached is out of date
  window.dispatchEvent(new Event(REACHABLE));
  if (!response.ok) throw new ApiError(response.status, json);
  return json;
}

/** Every item of a cursor-paged OpenAI list (`limit`, `after`, `has_more`, `last_id`). */
export async function listAll(api, path, params = {}) {
  const items = [];
  let after = null;
  for (;;) {
    const query = new URLSearchParams({ limit: "100", ...params });
    if (after) query.set("after", after);
    const page = await api("GET", `${path}?${query}`);
    items.push(...page.data);
    if (!page.has_more || page.data.length === 0) return items;
    after = page.last_id ?? page.data[page.data.length - 1].id;
  }
}
