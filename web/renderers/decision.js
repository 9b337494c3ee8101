// AITP-02 `decision`: a read-only summary naming the request it answers and what was chosen.
import { h } from "../lib/dom.js";
import { chosenOptions } from "./request_decision.js";
import { findPart } from "./thread.js";

export function renderDecision(payload, part, message, ctx) {
  const decision = payload.decision;
  const found =
    decision.request_decision_id !== undefined
      ? findPart(ctx.messages(), "request_decision", "id", decision.request_decision_id)
      : null;
  const request = found ? found.body : null;
  const subject = request
    ? request.title || request.description || `request ${request.id}`
    : `request ${decision.request_decision_id ?? "(unnamed)"}`;
  return h(
    "section",
    { class: "aitp-card aitp-decision", "data-renderer": "decision", "data-request-id": decision.request_decision_id },
    h("p", { class: "aitp-eyebrow" }, "Decision"),
    h("h3", { class: "aitp-title" }, `Answer to “${subject}”`),
    h(
      "ul",
      { class: "aitp-chosen" },
      chosenOptions(decision, request).map(({ id, name, quantity }) =>
        h("li", { "data-option-id": id }, name, quantity !== undefined && h("span", { class: "aitp-quantity" }, ` × ${quantity}`)),
      ),
    ),
  );
}
