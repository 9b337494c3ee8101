/**
 * Form fields that declare an actor's capabilities: one checkbox per capability in the server's
 * registry (declared by its latest schema URL) plus free schema URLs, one per line.
 */

import { h, uniqueId } from "./dom.js";

/**
 * A fieldset of capability checkboxes and an "other URLs" textarea.
 * @param {object[]} registry GET /v1/capabilities `data`
 * @param {{legend: string, checked?: boolean}} options
 * @returns {{element: HTMLFieldSetElement, value: () => string[]}}
 */
export function capabilityFields(registry, { legend, checked = false }) {
  const prefix = uniqueId("caps");
  const boxes = registry
    .filter((capability) => capability.latest)
    .map((capability) => {
      const id = `${prefix}-${capability.id}`;
      const input = h("input", { type: "checkbox", id, value: capability.schema_urls[capability.latest], checked });
      const label = h(
        "label",
        { for: id, title: capability.description },
        `${capability.title || capability.id} `,
        h("span", { class: "muted" }, `v${capability.latest}`),
      );
      return h("div", { class: "check" }, input, label);
    });
  const otherId = `${prefix}-other`;
  const other = h("textarea", {
    id: otherId,
    rows: 2,
    class: "mono",
    placeholder: "https://example.com/capabilities/my-cap/v1.0.0/schema.json",
    "aria-describedby": `${otherId}-hint`,
  });
  const element = h(
    "fieldset",
    { class: "capabilities" },
    h("legend", {}, legend),
    h("div", { class: "checks" }, boxes),
    h("label", { for: otherId }, "Other capability schema URLs"),
    h("p", { id: `${otherId}-hint`, class: "hint" }, "One URL per line."),
    other,
  );
  const value = () => [
    ...boxes.map((box) => box.querySelector("input")).filter((input) => input.checked).map((input) => input.value),
    ...other.value.split(/\s+/).map((url) => url.trim()).filter(Boolean),
  ];
  return { element, value };
}

/**
 * An actor id input and its capabilities.
 * @returns {{element: HTMLElement, value: () => {id: string, capabilities: string[]}, focus: () => void}}
 */
export function actorFields(registry, { legend = "Actor", removable = null } = {}) {
  const id = uniqueId("actor");
  const input = h("input", {
    id,
    type: "text",
    required: true,
    autocomplete: "off",
    spellcheck: "false",
    placeholder: "shop.near",
    "aria-describedby": `${id}-hint`,
  });
  const capabilities = capabilityFields(registry, { legend: "Capabilities it reads" });
  const element = h(
    "fieldset",
    { class: "actor-fields" },
    h("legend", {}, legend),
    h("label", { for: id }, "Actor id"),
    h("p", { id: `${id}-hint`, class: "hint" }, "The id its key acts as, e.g. an account name."),
    input,
    capabilities.element,
    removable && h("button", { type: "button", class: "link-button", onclick: removable }, `Remove ${legend.toLowerCase()}`),
  );
  return {
    element,
    value: () => ({ id: input.value.trim(), capabilities: capabilities.value() }),
    focus: () => input.focus(),
  };
}
