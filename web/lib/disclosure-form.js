/**
 * A form folded in a <details> ("New thread", "Add an actor"): while `action` runs the submit button
 * is disabled; a refusal shows as a sentence in the form's role=alert (the server's words under "Details"); success folds the form
 * and calls `done` (which usually builds a fresh one).
 */

import { h } from "./dom.js";
import { showError } from "./plain-words.js";

/**
 * @param {{summary: string, className: string, submitLabel: string, children: Node[],
 *          action: () => Promise<unknown>, done: () => void}} options
 * @returns {HTMLDetailsElement}
 */
export function disclosureForm({ summary, className, submitLabel, children, action, done }) {
  const alert = h("div", { class: "alert", role: "alert", hidden: true });
  const submit = h("button", { type: "submit", class: "primary" }, submitLabel);
  const onsubmit = async (event) => {
    event.preventDefault();
    showError(alert, null);
    submit.disabled = true;
    try {
      await action();
      details.open = false;
      done();
    } catch (error) {
      showError(alert, error);
    } finally {
      submit.disabled = false;
    }
  };
  const form = h("form", { class: className, "aria-label": summary, onsubmit }, children, alert, submit);
  const details = h("details", { class: `disclosure ${className}-disclosure` }, h("summary", {}, summary), form);
  return details;
}
