// AITP-03 `request_data`: title, description and a button (labelled fillButtonLabel) opening the
// form; the filled form goes back as a `data` message naming the request.
import { h, uniqueId } from "../lib/dom.js";
import { openRequestForm } from "./form.js";
import { requestLifecycle } from "./request.js";

/** "Name: Ada, Email: ada@example.com" for an answer's summary. */
export function describeData(data) {
  return (data.fields || [])
    .filter((field) => field.value !== undefined && field.value !== "")
    .map((field) => `${field.label || field.id}: ${field.value}`)
    .join(", ");
}

export function renderRequestData(payload, part, message, ctx) {
  const request = payload.request_data;
  const capability = (part.aitp && part.aitp.capability) || "aitp-03-data-request";
  const headingId = uniqueId("data-title");
  const title = request.title || "Information requested";
  const root = h("section", {
    class: "aitp-card aitp-request-data",
    "data-renderer": "request_data",
    "data-request-id": request.id,
    "aria-labelledby": headingId,
  });
  root.append(h("h3", { class: "aitp-title", id: headingId }, title));
  if (request.description) root.append(h("p", { class: "aitp-description" }, request.description));

  const fill = h("button", { type: "button", class: "aitp-button aitp-primary" }, request.fillButtonLabel || "Fill out form");
  const controls = h("fieldset", { class: "aitp-controls" }, h("legend", { class: "aitp-visually-hidden" }, title), fill);
  const lifecycle = requestLifecycle(ctx, message, {
    root,
    controls,
    capability,
    answer: "data",
    key: "request_data_id",
    id: request.id,
    verb: "sent",
    describe: describeData,
  });
  fill.addEventListener("click", () =>
    openRequestForm(request, ctx, {
      host: root,
      opener: fill,
      alert: lifecycle.alert,
      title,
      onSubmit: (fields) => lifecycle.send({ request_data_id: String(request.id), fields }),
    }),
  );
  return root;
}
