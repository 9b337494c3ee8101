// Read-only payment messages: AITP-01 `payment` and `payment_confirmation`, and the hub-era
// `payment_authorization` and `payment_result`. Each names the quote it pays when the thread has it. A customer
// reads amounts in the quote's money and plain words on every card: no token, network, account or transaction.
import { h } from "../lib/dom.js";
import { safeLinkUrl } from "../lib/urls.js";
import { formatDate, formatMoney } from "../lib/format.js";
import { actorOf, capabilityParts, findPart, labelOf } from "./thread.js";

function quoteTitle(ctx, quoteId) {
  const found = findPart(ctx.messages(), "quote", "quote_id", quoteId);
  return found ? found.body.description || `quote ${quoteId}` : `quote ${quoteId}`;
}

/**
 * Where the payment of quote `quoteId` stands, read from the thread as the service moves it: `open` (no
 * payment), `authorized` (a payment awaits its confirmation), `pending`, `paid` (a success: final) or
 * `failed` (a failure confirmation, or a hub-era authorization that failed itself: it may be paid again).
 * Returns {state, payer, message}: the payer of the last payment and the confirmation's message, if any.
 */
export function paymentState(messages, quoteId) {
  let now = { state: "open", payer: null, message: null };
  for (const { message, type, body } of capabilityParts(messages)) {
    if (String(body.quote_id) !== String(quoteId)) continue;
    if (type === "payment" || type === "payment_authorization") {
      const failed = type === "payment_authorization" && body.result === "failure";
      now = { state: failed ? "failed" : "authorized", payer: actorOf(message), message: body.message || null };
    } else if (type === "payment_confirmation" || type === "payment_result") {
      const state = body.result === "failure" ? "failed" : body.result === "pending" ? "pending" : "paid";
      now = { state, payer: now.payer, message: body.message || null };
      if (state === "paid") return now; // nothing moves a paid quote
    }
  }
  return now;
}

/** A <dl> of [label, value] rows; rows without a value are left out. */
export function facts(rows) {
  return h(
    "dl",
    { class: "aitp-facts" },
    rows
      .filter(([, value]) => value !== undefined && value !== null && value !== "")
      .map(([label, value]) => h("div", {}, h("dt", {}, label), h("dd", {}, value))),
  );
}

const RESULT_WORDS = { success: "Payment received", failure: "Payment failed", pending: "Payment pending" };

/** What the payee says of a payment, in words a customer reads (not the protocol's "success"). */
function resultBadge(result) {
  const known = Object.hasOwn(RESULT_WORDS, result);
  return h(
    "span",
    { class: `aitp-badge aitp-result-${known ? result : "other"}` },
    known ? RESULT_WORDS[result] : "Payment update",
  );
}

function detailList(details) {
  if (!Array.isArray(details) || details.length === 0) return null;
  return facts(
    details.map((detail) => {
      const value = String(detail.value ?? "");
      const link = safeLinkUrl(detail.url);
      return [
        detail.label,
        link ? h("a", { href: link, target: "_blank", rel: "noopener noreferrer" }, value) : value,
      ];
    }),
  );
}

export function renderPayment(payload, part, message, ctx) {
  const payment = payload.payment;
  const method = payment.payment_method || {};
  return h(
    "section",
    { class: "aitp-card aitp-payment", "data-renderer": "payment", "data-quote-id": payment.quote_id },
    h("p", { class: "aitp-eyebrow" }, "Payment"),
    h("h3", { class: "aitp-title" }, `Payment for “${quoteTitle(ctx, payment.quote_id)}”`),
    h("p", { class: "aitp-amount" }, formatMoney(method.amount, method.currency)),
    facts([
      ["Payer", payment.payer_id && labelOf(ctx, payment.payer_id)],
      ["Time", payment.timestamp ? formatDate(payment.timestamp) : null],
    ]),
  );
}

/**
 * The hub-era payment (`payment_authorization`): what was paid, by whom and when, in the quote's own money. Not
 * the token, network, account or transaction it names (they stay in the message, for developers): the customer
 * reads no crypto words. It is the payer's claim, so it says "sent", never "paid" (the payee's result says that).
 */
export function renderPaymentAuthorization(payload, part, message, ctx) {
  const authorization = payload.payment_authorization;
  const failed = authorization.result === "failure";
  const amount = legacyAmount(ctx, authorization);
  return h(
    "section",
    {
      class: "aitp-card aitp-payment",
      "data-renderer": "payment_authorization",
      "data-quote-id": authorization.quote_id,
      "data-result": authorization.result,
    },
    h("p", { class: "aitp-eyebrow" }, failed ? "Payment not made" : "Payment sent"),
    h("h3", { class: "aitp-title" }, `Payment for “${quoteTitle(ctx, authorization.quote_id)}”`),
    amount ? h("p", { class: "aitp-amount" }, amount) : null,
    authorization.message ? h("p", { class: "aitp-description" }, authorization.message) : null,
    facts([
      ["Payer", labelOf(ctx, actorOf(message))],
      ["Time", authorization.timestamp ? formatDate(authorization.timestamp) : null],
    ]),
  );
}

/**
 * How much a hub-era payment paid, in the money of the quote it pays: the plan of that amount (else the first),
 * e.g. "$2.50". Without the quote, the number alone: its `token_type` is no currency a customer reads.
 */
function legacyAmount(ctx, authorization) {
  const details = Array.isArray(authorization.details) ? authorization.details : [];
  const amounts = details.map((detail) => Number(detail.amount)).filter(Number.isFinite);
  const amount = amounts.length ? amounts.reduce((sum, value) => sum + value, 0) : null;
  const quote = findPart(ctx.messages(), "quote", "quote_id", authorization.quote_id)?.body;
  const plans = Array.isArray(quote?.payment_plans) ? quote.payment_plans : [];
  const plan = plans.find((each) => Number(each.amount) === amount) ?? plans[0];
  if (amount === null) return plan ? formatMoney(plan.amount, plan.currency) : "";
  return plan ? formatMoney(amount, plan.currency) : String(amount);
}

/** `payment_confirmation` (AITP-01) and `payment_result` (hub-era) look alike: result, message, details. */
export function renderPaymentOutcome(payload, part, message, ctx) {
  const type = "payment_confirmation" in payload ? "payment_confirmation" : "payment_result";
  const outcome = payload[type];
  return h(
    "section",
    {
      class: "aitp-card aitp-payment-outcome",
      "data-renderer": type,
      "data-quote-id": outcome.quote_id,
      "data-result": outcome.result,
    },
    h("p", { class: "aitp-eyebrow" }, resultBadge(outcome.result)),
    h("h3", { class: "aitp-title" }, outcome.message || `Payment for “${quoteTitle(ctx, outcome.quote_id)}”`),
    outcome.message ? h("p", { class: "aitp-description" }, `For “${quoteTitle(ctx, outcome.quote_id)}”`) : null,
    facts([
      ["Payment", outcome.payment_id],
      ["Time", outcome.timestamp ? formatDate(outcome.timestamp) : null],
    ]),
    detailList(outcome.details),
  );
}
