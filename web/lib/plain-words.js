/**
 * What the customer reads instead of protocol words: a refusal as a sentence (its code, param and the
 * server's message stay, folded under "Details", for developers), a payment method by name, a message
 * preview by what it asks.
 */

import { h } from "./dom.js";

const BY_CODE = {
  network_error: "We can't reach the service right now. Check your connection; we keep trying.",
  already_answered: "This was already answered, so nothing more was sent.",
  unknown_request: "This request is no longer open, so nothing was sent.",
  capability_not_supported: "Someone in this conversation can't read this kind of message, so it was not sent.",
  unknown_capability: "The service doesn't know this kind of message, so it was not sent.",
  invalid_decision: "That choice isn't one of the options offered, so it was not sent.",
  invalid_data: "Some of the information doesn't fit what was asked. Check the fields and try again.",
  invalid_payment: "The payment doesn't match the quote, so it was not sent.",
  string_too_long: "That is too long to send. Shorten it and try again.",
  request_too_large: "That is too long to send. Shorten it and try again.",
  rate_limit_exceeded: "That was a lot at once. Wait a moment, then try again.",
  invalid_api_key: "Your sign-in is no longer valid. Sign in again.",
  expired_api_key: "Your sign-in has expired. Sign in again.",
  missing_api_key: "You are not signed in. Sign in again.",
  invalid_sign_in_code: "This sign-in link has expired or was already used. Ask for a new one.",
  thread_not_found: "This conversation is no longer available to you.",
  fetch_failed: "The form could not be loaded. Try again in a moment.",
  url_not_allowed: "The form is hosted where this service may not load it from.",
  unknown_actor: "No one with that account name is on this service. Check the name they gave you (e.g. shop.near).",
  contact_refused: "They don't accept conversations from you here. They may accept verified accounts only.",
  display_name_taken: "That name belongs to a verified business or person. Choose another name.",
  too_many_threads: "You have started many conversations in a short time. Wait a while, then try again.",
  turn_budget_exhausted: "The agents here are waiting for a person to write before they go on.",
  agent_rate_limited: "That was a lot of messages in this conversation at once. Wait a moment, then try again.",
};

const BY_STATUS = {
  0: BY_CODE.network_error,
  401: BY_CODE.invalid_api_key,
  403: "You are not allowed to do that here.",
  404: "This is no longer available.",
  409: "This was already done, so nothing more was sent.",
  413: BY_CODE.request_too_large,
  422: "The service could not accept this, so it was not sent.",
  429: BY_CODE.rate_limit_exceeded,
};

/** The sentence a customer reads for `error` (an ApiError, or a local Error whose message is already one). */
export function sentenceFor(error) {
  if (!error || error.status === undefined) return (error && error.message) || String(error);
  if (error.sentence) return error.sentence; // set where the context says more than the code
  return (
    BY_CODE[error.code] ??
    BY_STATUS[error.status] ??
    (error.status >= 500 ? "Something went wrong on our side. Try again in a moment." : "That could not be done.")
  );
}

/** The developer's view of `error`: code, param and the server's own message. */
export function detailFor(error) {
  if (!error || error.status === undefined) return "";
  return [
    error.status ? `HTTP ${error.status}` : null,
    error.code && `code ${error.code}`,
    error.param && `param ${error.param}`,
    error.message,
  ]
    .filter(Boolean)
    .join(" · ");
}

/** Fill `region` (role=alert) with `error`'s sentence and a folded "Details" line; null or "" empties it. */
export function showError(region, error) {
  region.replaceChildren();
  region.hidden = !error;
  if (!error) return;
  const detail = detailFor(error);
  region.append(h("span", { class: "sentence" }, sentenceFor(error)));
  if (detail) {
    region.append(" ", h("details", { class: "error-detail" }, h("summary", {}, "Details"), h("code", {}, detail)));
  }
  region.dataset.code = error.code ?? "";
  // an error must not appear out of view (below the fold of a long card)
  requestAnimationFrame(() => region.isConnected && region.scrollIntoView({ block: "nearest" }));
}

const ASKS = {
  request_decision: "Asks you to choose",
  decision: "Made a choice",
  request_data: "Asks for some details",
  data: "Sent the details",
  quote: "Sent a quote",
  payment: "Sent a payment",
  payment_authorization: "Sent a payment",
  payment_confirmation: "Confirmed a payment",
  payment_result: "Confirmed a payment",
};

/** A preview line for a capability message of `type` (e.g. "Asks you to choose: Recommended Products"). */
export function describeKind(type, title) {
  const said = ASKS[type] ?? "Sent a structured message";
  return title ? `${said}: ${title}` : said;
}
