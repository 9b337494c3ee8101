// AITP-02 `decision`: a compact answer bubble, "You chose Soundcore by Anker, Cream × 2", naming the request
// it answers in its accessible name.
import { h } from "../lib/dom.js";
import { chosenOptions } from "./request_decision.js";
import { actorOf, findPart, capitalized, whoIs } from "./thread.js";

export function renderDecision(payload, part, message, ctx) {
  const decision = payload.decision;
  const found =
    decision.request_decision_id !== undefined
      ? findPart(ctx.messages(), "request_decision", "id", decision.request_decision_id)
      : null;
  const request = found ? found.body : null;
  const subject = request ? request.title || request.description || null : null;
  const chosen = chosenOptions(decision, request);
  return h(
    "section",
    {
      class: "aitp-answer aitp-decision",
      "data-renderer": "decision",
      "data-request-id": decision.request_decision_id,
      "aria-label": subject ? `Answer to “${subject}”` : "Answer",
    },
    h("p", { class: "aitp-answer-line" }, `${capitalized(whoIs(ctx, actorOf(message)))} chose `),
    h(
      "ul",
      { class: "aitp-chosen" },
      chosen.map(({ id, name, quantity }) =>
        h(
          "li",
          { "data-option-id": id },
          name,
          quantity !== undefined && quantity !== 1 && h("span", { class: "aitp-quantity" }, ` × ${quantity}`),
        ),
      ),
    ),
  );
}
