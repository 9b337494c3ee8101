/**
 * Message text as a safe Markdown subset: a maintained parser (marked) and a maintained sanitiser
 * (DOMPurify), both vendored in web/vendor/. Raw HTML in a message is shown as text, never parsed; the
 * sanitiser keeps only the tags below; links must be http(s) or mailto and open in a new tab; images are
 * not loaded (a message must not make the browser fetch what its author chooses).
 */

import { Marked } from "../vendor/marked.esm.js";
import DOMPurify from "../vendor/purify.es.js";

const ALLOWED_TAGS = [
  "p", "br", "strong", "em", "del", "code", "pre", "blockquote", "ul", "ol", "li", "a", "hr",
  "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td",
];
const ALLOWED_ATTR = ["href", "title", "start"];

const escapeHtml = (text) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);

const markdown = new Marked({
  gfm: true,
  breaks: true, // a chat line break is a line break
  async: false,
  renderer: {
    html: ({ text }) => escapeHtml(text), // `<b>` in a message is shown as typed
    image: ({ text, href }) => escapeHtml(text || href || ""), // the alt text, not the image
  },
});

const purify = DOMPurify(window);
purify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName !== "A") return;
  const href = node.getAttribute("href") || "";
  if (!/^(https?:|mailto:)/i.test(href)) {
    node.removeAttribute("href");
    return;
  }
  node.setAttribute("target", "_blank");
  node.setAttribute("rel", "noopener noreferrer nofollow");
});

/** A <div class="text markdown"> with `text` rendered as sanitised Markdown. */
export function renderMarkdown(text) {
  const html = markdown.parse(String(text ?? ""));
  const fragment = purify.sanitize(html, { ALLOWED_TAGS, ALLOWED_ATTR, RETURN_DOM_FRAGMENT: true });
  const element = document.createElement("div");
  element.className = "text markdown";
  element.append(fragment);
  return element;
}
