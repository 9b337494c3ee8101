// AITP-03 `data`: the submitted values, read-only, with an Edit action for their author that
// re-opens the filled form and posts a new `data` message.
import { h } from "../lib/dom.js";
import { alertRegion, statusNote } from "./feedback.js";
import { openRequestForm } from "./form.js";
import { replySchema } from "./schema.js";
import { actorOf, findPart, capitalized, whoIs } from "./thread.js";

export function renderData(payload, part, message, ctx) {
  const data = payload.data;
  const capability = (part.aitp && part.aitp.capability) || "aitp-03-data-request";
  const found =
    data.request_data_id !== undefined ? findPart(ctx.messages(), "request_data", "id", data.request_data_id) : null;
  const request = found ? found.body : null;
  const subject = request ? request.title || request.description : null;

  const root = h(
    "section",
    { class: "aitp-answer aitp-data", "data-renderer": "data", "data-request-id": data.request_data_id },
    h("p", { class: "aitp-answer-line" }, `${capitalized(whoIs(ctx, actorOf(message)))} sent ${subject ? `“${subject}”` : "the details"}`),
    h(
      "dl",
      { class: "aitp-values" },
      (data.fields || []).map((field) =>
        h(
          "div",
          { class: "aitp-value", "data-field-id": field.id },
          h("dt", {}, field.label || field.id),
          h("dd", {}, field.value === undefined || field.value === "" ? "—" : String(field.value)),
        ),
      ),
    ),
  );

  // only the author edits, and only when the form can be rebuilt from the request
  if (!request || actorOf(message) !== ctx.me) return root;
  const alert = alertRegion();
  const notes = h("div", { class: "aitp-notes" });
  const edit = h("button", { type: "button", class: "aitp-button" }, "Edit");
  root.append(h("div", { class: "aitp-actions" }, edit), alert.node, notes);
  const gate = replySchema(ctx, capability);
  if (gate.reason) {
    edit.disabled = true;
    notes.replaceChildren(statusNote(gate.reason, "warning"));
    return root;
  }

  const values = Object.fromEntries((data.fields || []).map((field) => [field.id, field.value ?? ""]));
  edit.addEventListener("click", () =>
    openRequestForm(request, ctx, {
      host: root,
      opener: edit,
      alert,
      title: request.title || "Edit your answer",
      values,
      submitLabel: "Save changes",
      onSubmit: async (fields) => {
        await replaceAnswer(ctx, message, capability, { request_data_id: String(data.request_data_id), fields });
        edit.disabled = true;
        root.dataset.replaced = "true";
        notes.replaceChildren(statusNote("Replaced by your edited answer below.", "done"));
      },
    }),
  );
  return root;
}

/**
 * Post `body` as a new `data` answer. The service accepts one answer per request (409
 * `already_answered`), so when this message is that answer it is deleted first and the new one
 * posted: the thread then holds the edited answer only. Validation errors (422) come before the
 * 409, so nothing is deleted for an edit the service would refuse anyway.
 */
async function replaceAnswer(ctx, message, capability, body) {
  const post = () => {
    const schema = replySchema(ctx, capability);
    if (!schema.url) throw new Error(schema.reason);
    return ctx.post(JSON.stringify({ $schema: schema.url, data: body }));
  };
  try {
    return await post();
  } catch (error) {
    if (error.code !== "already_answered") throw error;
  }
  await ctx.api("DELETE", `/threads/${encodeURIComponent(ctx.thread.id)}/messages/${encodeURIComponent(message.id)}`);
  return post();
}
