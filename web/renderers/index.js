// The capability renderers: the app shell calls `renderPart` once per capability message part
// and gets back an element carrying `data-renderer` (the message type, or "json").
import { renderData } from "./data.js";
import { renderDecision } from "./decision.js";
import { renderJson } from "./json.js";
import { renderPayment, renderPaymentAuthorization, renderPaymentOutcome } from "./payments.js";
import { renderQuote } from "./quote.js";
import { renderRequestData } from "./request_data.js";
import { renderRequestDecision } from "./request_decision.js";
import { capabilityOf } from "./schema.js";
import { payloadOf } from "./thread.js";

// message type → renderer; the capability only matters inside a renderer (e.g. legacy quotes)
const RENDERERS = {
  request_decision: renderRequestDecision,
  decision: renderDecision,
  request_data: renderRequestData,
  data: renderData,
  quote: renderQuote,
  payment: renderPayment,
  payment_authorization: renderPaymentAuthorization,
  payment_confirmation: renderPaymentOutcome,
  payment_result: renderPaymentOutcome,
};

/** Render one capability message part (`part.aitp` set, or a JSON object with `$schema`). */
export function renderPart(part, message, ctx) {
  const payload = payloadOf(part) || {};
  const { type } = capabilityOf(payload, part);
  const render = RENDERERS[type];
  const body = payload[type];
  if (render && body && typeof body === "object" && !Array.isArray(body)) {
    try {
      return render(payload, part, message, ctx);
    } catch (error) {
      // an unvalidated message can be malformed: show it as JSON rather than break the thread
      console.warn(`renderer for ${type} failed, showing JSON`, error);
    }
  }
  return renderJson(payload, part);
}
