/**
 * The one DOM builder of the UI and its renderers: `h("button", {type: "submit", onclick}, "Send")`.
 *
 * Message data reaches the page as text nodes, attribute values or properties, never as markup, so
 * nothing a message says can become an element or a script; the one exception, message text as
 * Markdown, goes through a sanitiser that keeps a few formatting tags (lib/markdown.js).
 */

/**
 * Build an element. Attributes named `on<event>` become listeners; `class` and `dataset` are handled;
 * non-string values of known properties (`checked`, `disabled`, `hidden`, `rows`…) are set as
 * properties; `null`, `undefined` and `false` are skipped. Children may be strings, nodes or arrays.
 */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      element.addEventListener(name.slice(2), value);
    } else if (name === "dataset") {
      Object.assign(element.dataset, value);
    } else if (name === "class") {
      element.className = value;
    } else if (name in element && typeof value !== "string") {
      element[name] = value;
    } else {
      element.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(element, children);
  return element;
}

function append(parent, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else parent.append(child instanceof Node ? child : String(child));
  }
}

/** Replace every child of `element` with `children`. */
export function replaceChildren(element, ...children) {
  element.replaceChildren();
  append(element, children);
}

let counter = 0;

/** A document-unique id (labels, aria-describedby and datalists refer to elements by id). */
export function uniqueId(prefix = "aitp") {
  counter += 1;
  return `${prefix}-${counter}`;
}
