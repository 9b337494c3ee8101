/**
 * One message as an <article class="message" data-message-id data-actor>: its author, time and
 * parts. Plain text is shown here; a capability part (`aitp` set, or text that is a JSON object with
 * `$schema`) goes to the renderers (`web/renderers/index.js`, `renderPart(part, message, ctx)`).
 */

import { h } from "./dom.js";
import { formatTime } from "./format.js";
import { renderMarkdown } from "./markdown.js";
import { picture } from "./picture.js";
import { safeImageUrl } from "./urls.js";

// answers: drawn as a compact bubble of their author, not as a full-width card
const ANSWERS = new Set(["decision", "data", "payment", "payment_authorization"]);

let renderers = null;

/** Load the renderers once; if they cannot load, capability parts show as plain JSON. */
export async function loadRenderers() {
  if (renderers) return renderers;
  try {
    renderers = await import("../renderers/index.js");
  } catch (error) {
    console.error("The capability renderers did not load; showing raw JSON instead.", error);
    renderers = { renderPart: null };
  }
  return renderers;
}

/**
 * The message's content parts, each with its `aitp` summary (the server lists them in `message.aitp`,
 * index for index, null for plain parts), the shape the renderers take.
 */
export function partsOf(message) {
  return (message.content ?? []).map((part, index) => ({ ...part, aitp: message.aitp?.[index] ?? part.aitp ?? null }));
}

/** The JSON object of a capability part, or null for plain text. */
export function capabilityJson(part) {
  if (part.type !== "text") return null;
  const text = part.text?.value ?? "";
  if (!part.aitp && !text.trimStart().startsWith("{")) return null;
  try {
    const value = JSON.parse(text);
    if (value && typeof value === "object" && !Array.isArray(value) && (part.aitp || "$schema" in value)) return value;
  } catch {
    // plain text that happens to start with a brace
  }
  return null;
}

function rawJson(part, value) {
  return h(
    "details",
    { class: "raw-json", dataset: { renderer: "json" } },
    h("summary", {}, "Structured message"),
    h("pre", {}, JSON.stringify(value, null, 2)),
  );
}

function renderContentPart(part, message, ctx) {
  const value = capabilityJson(part);
  if (value !== null) {
    if (!renderers?.renderPart) return rawJson(part, value);
    try {
      return renderers.renderPart(part, message, ctx);
    } catch (error) {
      console.error("A renderer failed; showing the part as JSON.", error);
      return rawJson(part, value);
    }
  }
  if (part.type === "text") return renderMarkdown(part.text.value);
  const image = part.type === "image_url" ? safeImageUrl(part.image_url?.url) : null;
  if (image) {
    const shown = picture({
      className: "part-image",
      placeholderClass: "part-image-placeholder",
      alt: "Image sent with the message",
      label: "Image not available",
    });
    shown.show(image);
    return shown.nodes;
  }
  return h("p", { class: "hint" }, `(${part.type} content)`);
}

/** The message type of a capability part ("decision", …), or null. */
function typeOf(part, value) {
  return part.aitp?.type ?? Object.keys(value).find((key) => key !== "$schema") ?? null;
}

/** The <article> for `message`; `me` decides whether it is drawn as mine. */
export function messageView(message, ctx) {
  const actor = message.metadata?.actor ?? message.role;
  const mine = ctx.mine ? ctx.mine(actor) : actor === ctx.me;
  const parts = partsOf(message);
  const types = parts.map((part) => {
    const value = capabilityJson(part);
    return value === null ? null : typeOf(part, value);
  });
  const answer = types.some(Boolean) && types.every((type) => type === null || ANSWERS.has(type));
  const structured = types.some(Boolean) && !answer;
  const time = new Date(message.created_at * 1000);
  const name = mine ? "You" : ctx.people?.name(actor) ?? actor;
  return h(
    "article",
    {
      class: ["message", mine && "mine", structured && "structured", answer && "answer"].filter(Boolean).join(" "),
      dataset: { messageId: message.id, actor },
      "aria-label": `${mine || !ctx.people ? name : ctx.people.spoken(actor)}, ${formatTime(message.created_at)}`,
    },
    !mine && ctx.people && h("div", { class: "message-avatar" }, ctx.people.avatar(actor, "small")),
    h(
      "div",
      { class: "message-main" },
      h(
        "header",
        { class: "message-head" },
        h("span", { class: "message-author", title: actor }, name),
        // the name is what the account says about itself; the mark says what the server checked
        !mine && ctx.people && ctx.people.badge(actor),
        h("time", { datetime: time.toISOString(), class: "message-time" }, formatTime(message.created_at)),
      ),
      h(
        "div",
        { class: "message-body" },
        parts.map((part) => renderContentPart(part, message, ctx)),
      ),
    ),
  );
}
