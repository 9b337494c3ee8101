// The generic view: any capability message without a dedicated renderer, shown as collapsed,
// syntax-highlighted JSON that names its capability.
import { h } from "../lib/dom.js";
import { capabilityLabel } from "./schema.js";

/** Token-by-token highlighted JSON, built from DOM nodes (never innerHTML). */
export function highlightedJson(value) {
  const code = h("code", { class: "aitp-json" });
  const text = JSON.stringify(value, null, 2) ?? "null";
  // strings (keys are strings followed by a colon), numbers, literals, punctuation
  const token = /("(?:\\.|[^"\\])*")(\s*:)?|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|\b(true|false|null)\b/g;
  let last = 0;
  for (const match of text.matchAll(token)) {
    if (match.index > last) code.append(text.slice(last, match.index));
    if (match[1] !== undefined) {
      code.append(h("span", { class: match[2] ? "aitp-json-key" : "aitp-json-string" }, match[1]));
      if (match[2]) code.append(match[2]);
    } else if (match[3] !== undefined) {
      code.append(h("span", { class: "aitp-json-number" }, match[3]));
    } else {
      code.append(h("span", { class: "aitp-json-literal" }, match[4]));
    }
    last = match.index + match[0].length;
  }
  code.append(text.slice(last));
  return h("pre", { class: "aitp-json-block" }, code);
}

/** A collapsed <details> with the message's JSON; its summary names the capability. */
export function renderJson(payload, part, type = "json") {
  return h(
    "details",
    { class: "aitp-card aitp-json-view", "data-renderer": type },
    h("summary", {}, capabilityLabel(payload, part)),
    highlightedJson(payload),
  );
}
