// How renderers talk back to the user: the server's refusal in a role=alert region next to the
// control that caused it, and the "answered" / "cannot reply" notes that disable a request.
import { h } from "../lib/dom.js";

/** An empty role=alert region; `show(error)` fills it with the server's message (and param). */
export function alertRegion() {
  const region = h("p", { class: "aitp-alert", role: "alert", hidden: true });
  return {
    node: region,
    show(error) {
      const message = (error && error.message) || String(error);
      const param = error && error.param ? ` (${error.param})` : "";
      region.textContent = message + param;
      region.hidden = false;
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

/** A short status note (e.g. "Answered by shop.near"); role=status so screen readers hear it. */
export function statusNote(text, kind = "info") {
  return h("p", { class: `aitp-note aitp-note-${kind}`, role: "status" }, text);
}
