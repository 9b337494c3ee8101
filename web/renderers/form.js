// AITP-03 forms: the fields of a request_data (inline, or a json_url definition loaded through
// the service's /v1/fetch endpoint), rendered as a labelled form inside a modal <dialog>.
import { h, uniqueId } from "../lib/dom.js";
import { alertRegion } from "./feedback.js";

const INPUT_TYPES = { text: "text", number: "number", email: "email", tel: "tel" };

// json_url → the promise of its fields: each definition is fetched once per page
const loaded = new Map();

/**
 * The fields of a request's form. Inline fields are returned as they are; a `json_url` form is
 * fetched through the service (which applies its allow-list and size/time limits, never the browser
 * directly) and cached; a refusal is not cached, so the user can try again.
 */
export async function formFields(request, ctx) {
  const form = request.form || {};
  if (Array.isArray(form.fields)) return form.fields;
  const url = form.json_url;
  if (typeof url !== "string") throw new Error("This request has neither form fields nor a json_url.");
  if (!loaded.has(url)) {
    const fields = ctx.api("GET", `/fetch?url=${encodeURIComponent(url)}`).then((definition) => {
      // a definition is a Form ({fields: [...]}) or, leniently, the bare array of fields
      const found = Array.isArray(definition) ? definition : definition && definition.fields;
      if (!Array.isArray(found) || found.length === 0) throw new Error(`The form at ${url} defines no fields.`);
      return found;
    });
    fields.catch(() => loaded.delete(url));
    loaded.set(url, fields);
  }
  return loaded.get(url);
}

/**
 * Load `request`'s fields (with `opener` busy; a refusal goes to `alert`), then open the form dialog
 * on `host`. `title`, `values`, `submitLabel` and `onSubmit` are as for openFormDialog.
 */
export async function openRequestForm(request, ctx, { host, opener, alert, title, values, submitLabel, onSubmit }) {
  alert.clear();
  opener.disabled = true;
  opener.setAttribute("aria-busy", "true");
  let fields;
  try {
    fields = await formFields(request, ctx);
  } catch (error) {
    alert.show(error);
    return null;
  } finally {
    opener.disabled = false;
    opener.removeAttribute("aria-busy");
  }
  const description = request.description;
  return openFormDialog({ host, opener, title, description, fields, values, submitLabel, onSubmit });
}

function fieldControl(field, id, value, describedBy) {
  const common = {
    id,
    name: field.id,
    required: field.required === true,
    autocomplete: field.autocomplete || null,
    "aria-describedby": describedBy,
  };
  const type = field.type || "text";
  const options = Array.isArray(field.options) ? field.options : [];
  if (type === "textarea") {
    const area = h("textarea", { ...common, rows: 4 });
    area.value = value;
    return [area];
  }
  if (type === "select") {
    const select = h(
      "select",
      common,
      h("option", { value: "" }, "Choose…"),
      options.map((option) => h("option", { value: option }, option)),
    );
    if (value && !options.includes(value)) select.append(h("option", { value }, value));
    select.value = value;
    return [select];
  }
  if (type === "combobox") {
    const listId = uniqueId("options");
    const input = h("input", { ...common, type: "text", list: listId });
    input.value = value;
    return [
      input,
      h(
        "datalist",
        { id: listId },
        options.map((option) => h("option", { value: option })),
      ),
    ];
  }
  const input = h("input", { ...common, type: INPUT_TYPES[type] || "text", step: type === "number" ? "any" : null });
  input.value = value;
  return [input];
}

/** One labelled field; its description is wired through aria-describedby. */
function fieldRow(field, value) {
  const id = uniqueId(`field-${field.id}`);
  const helpId = field.description ? uniqueId("help") : null;
  const label = h(
    "label",
    { for: id },
    field.label || field.id,
    field.required ? h("span", { class: "aitp-required", "aria-hidden": "true" }, " *") : null,
  );
  return h(
    "div",
    { class: "aitp-field", "data-field-id": field.id },
    label,
    helpId ? h("p", { class: "aitp-help", id: helpId }, field.description) : null,
    fieldControl(field, id, value, helpId),
  );
}

/**
 * Open a modal dialog with the form. `values` (id → value) pre-fill it, else each field's
 * default_value. `onSubmit(fields)` gets `[{id, label, value}]`; when it rejects, the error
 * is shown in the dialog's alert and the dialog stays open; when it resolves, the dialog closes.
 */
export function openFormDialog({
  host,
  opener,
  title,
  description,
  fields,
  values = {},
  submitLabel = "Send",
  onSubmit,
}) {
  const titleId = uniqueId("form-title");
  const alert = alertRegion();
  const submit = h("button", { type: "submit", class: "aitp-button aitp-primary" }, submitLabel);
  const cancel = h("button", { type: "button", class: "aitp-button" }, "Cancel");
  const form = h(
    "form",
    { class: "aitp-form" },
    fields.map((field) => fieldRow(field, String(values[field.id] ?? field.default_value ?? ""))),
    alert.node,
    h("div", { class: "aitp-actions" }, cancel, submit),
  );
  const dialog = h(
    "dialog",
    { class: "aitp-dialog", "aria-labelledby": titleId },
    h("h3", { class: "aitp-title", id: titleId }, title),
    description ? h("p", { class: "aitp-description" }, description) : null,
    form,
  );
  // focus goes back where it came from: the opener, or its card once the opener is disabled
  const restoreFocus = () => {
    if (opener && opener.isConnected && !opener.matches(":disabled")) return opener.focus();
    if (!host.hasAttribute("tabindex")) host.setAttribute("tabindex", "-1");
    host.focus();
  };
  const close = () => {
    dialog.close();
    dialog.remove();
    restoreFocus();
  };
  cancel.addEventListener("click", close);
  dialog.addEventListener("close", () => {
    if (dialog.isConnected) close(); // Escape closes the dialog natively
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault(); // the browser has already checked required/email/number
    alert.clear();
    submit.disabled = true;
    const filled = fields.map((field) => {
      const entry = { id: String(field.id), value: String(form.elements.namedItem(field.id).value ?? "") };
      if (typeof field.label === "string") entry.label = field.label;
      return entry;
    });
    try {
      await onSubmit(filled);
      close();
    } catch (error) {
      alert.show(error);
      submit.disabled = false;
    }
  });
  host.append(dialog);
  dialog.showModal();
  const first = form.querySelector("input, select, textarea");
  if (first) first.focus();
  return dialog;
}
