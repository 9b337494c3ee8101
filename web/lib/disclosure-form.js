/**
 * A form folded in a <details> ("New thread", "Add an actor"): while `action` runs the submit button
 * is disabled; a refusal shows the server's message in the form's role=alert; success folds the form
 * and calls `done` (which usually builds a fresh one).
 */

import { h, showAlert } from "./dom.js";

/**
 * @param {{summary: string, className: string, submitLabel: string, children: Node[],
 *          action: () => Promise<unknown>, done: () => void}} options
 * @returns {HTMLDetailsElement}
 */
export function disclosureForm({ summary, className, submitLabel, children, action, done }) {
  const alert = h("p", { class: "alert", role: "alert", hidden: true });
  const submit = h("button", { type: "submit", class: "primary" }, submitLabel);
  const onsubmit = async (event) => {
    event.preventDefault();
    showAlert(alert, "");
    submit.disabled = true;
    try {
      await action();
      details.open = false;
      done();
    } catch (error) {
      showAlert(alert, error.message);
    } finally {
      submit.disabled = false;
    }
  };
  const form = h("form", { class: className, "aria-label": summary, onsubmit }, children, alert, submit);
  const details = h("details", { class: `disclosure ${className}-disclosure` }, h("summary", {}, summary), form);
  return details;
}
