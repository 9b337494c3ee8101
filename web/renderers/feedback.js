// How renderers talk back to the user: the server's refusal in a role=alert region next to the
// control that caused it, and the "answered" / "cannot reply" notes that disable a request.
import { h } from "../lib/dom.js";
import { showError } from "../lib/plain-words.js";

/** An empty role=alert region; `show(error)` fills it with a sentence (the server's code, param and message
 * folded under "Details"). */
export function alertRegion() {
  const region = h("div", { class: "aitp-alert", role: "alert", hidden: true });
  return {
    node: region,
    show(error) {
      showError(region, error);
    },
    clear() {
      region.textContent = "";
      region.hidden = true;
    },
  };
}

/** Run `action` with `button` busy; a refusal goes to `alert`. Resolves to the action's result or null. */
export async function submitting(button, alert, action) {
  alert.clear();
  const label = button.textContent;
  button.disabled = true;
  button.setAttribute("aria-busy", "true");
  try {
    return await action();
  } catch (error) {
    alert.show(error);
    button.disabled = false;
    return null;
  } finally {
    button.removeAttribute("aria-busy");
    button.textContent = label;
  }
}

/** A short status note (e.g. "You chose Red socks"); role=status so screen readers hear it. */
export function statusNote(text, kind = "info") {
  return h("p", { class: `aitp-note aitp-note-${kind}`, role: "status" }, text);
}
