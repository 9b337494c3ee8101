/**
 * Message text as a safe Markdown subset: a maintained parser (marked) and a maintained sanitiser
 * (DOMPurify), both vendored in web/vendor/. The sanitiser keeps only the tags below, so HTML in a message
 * renders what is safe (`<b>`, `<em>`) and drops the rest with what it holds (`<script>…</script>`, `<img
 * onerror>`, `<style>`); links must be http(s) or mailto and open in a new tab, any other link is just its
 * text; images are not loaded (a message must not make the browser fetch what its author chooses). Words in
 * angle brackets that are no markup ("reply with <your order number>") are shown as typed.
 */

import { Marked } from "../vendor/marked.esm.js";
import DOMPurify from "../vendor/purify.es.js";

const ALLOWED_TAGS = [
  "p", "br", "strong", "b", "em", "i", "del", "s", "code", "pre", "blockquote", "ul", "ol", "li", "a", "hr",
  "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td",
];
const ALLOWED_ATTR = ["href", "title", "start"];

const escapeHtml = (text) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);

const elementNames = new Map(); // name -> is an HTML element
function isHtmlElement(name) {
  const key = name.toLowerCase();
  if (!elementNames.has(key)) {
    // a made-up word makes an HTMLUnknownElement; a hyphenated name would be a custom element, no HTML either
    const known = !key.includes("-") && !(document.createElement(key) instanceof HTMLUnknownElement);
    elementNames.set(key, known || key === "svg" || key === "math");
  }
  return elementNames.get(key);
}

/**
 * Raw HTML as the sanitiser should see it: markup as it is (the sanitiser drops what is not safe), and
 * angle brackets around words as text. Markup is a tag of a real element, a closing tag, or a tag with an
 * attribute value or a closing slash (`<circle r=4 />` inside an `<svg>`); "<your order number>" is words.
 */
const htmlOrText = (html) =>
  html.replace(/<(\/?)([a-zA-Z][\w-]*)([^<>]*)/g, (tag, slash, name, rest) =>
    slash || isHtmlElement(name) || /=|\/\s*$/.test(rest) ? tag : `&lt;${tag.slice(1)}`,
  );

const markdown = new Marked({
  gfm: true,
  breaks: true, // a chat line break is a line break
  async: false,
  renderer: {
    html: ({ text }) => htmlOrText(text), // the sanitiser below decides what of it stays
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

/** `text` as a sanitised DOM fragment; a link whose address was dropped is replaced by its text. */
function sanitisedFragment(text) {
  const html = markdown.parse(String(text ?? ""));
  const fragment = purify.sanitize(html, { ALLOWED_TAGS, ALLOWED_ATTR, RETURN_DOM_FRAGMENT: true });
  for (const link of fragment.querySelectorAll("a:not([href])")) link.replaceWith(...link.childNodes);
  return fragment;
}

const HEADINGS = "h1, h2, h3, h4, h5, h6";
const levelOf = (heading) => Number(heading.tagName[1]);

/**
 * A message's own headings sit under the conversation's title (h2), as a card's title does (h3): its outline
 * starts at h3 and skips no level ("# A" then "### B" become h3 then h4), so the page's heading order stays
 * whole for screen readers whatever levels the author typed.
 */
function nestHeadings(fragment) {
  const headings = [...fragment.querySelectorAll(HEADINGS)];
  if (!headings.length) return;
  const top = Math.min(...headings.map(levelOf));
  let previous = 2;
  for (const heading of headings) {
    const level = Math.max(3, Math.min(6, levelOf(heading) - top + 3, previous + 1));
    previous = level;
    if (level === levelOf(heading)) continue;
    const nested = document.createElement(`h${level}`);
    for (const { name, value } of heading.attributes) nested.setAttribute(name, value);
    nested.append(...heading.childNodes);
    heading.replaceWith(nested);
  }
}

/** A <div class="text markdown"> with `text` rendered as sanitised Markdown. */
export function renderMarkdown(text) {
  const element = document.createElement("div");
  element.className = "text markdown";
  const fragment = sanitisedFragment(text);
  nestHeadings(fragment);
  element.append(fragment);
  return element;
}

const BLOCKS = `p, li, blockquote, pre, ${HEADINGS}, tr, th, td, hr`;

/** What a reader sees of Markdown `text`, on one line: "**Great** [deal](…)" → "Great deal". */
export function plainText(text) {
  const fragment = sanitisedFragment(text);
  for (const node of fragment.querySelectorAll("br")) node.replaceWith(" ");
  for (const node of fragment.querySelectorAll(BLOCKS)) node.after(" ");
  return fragment.textContent.replace(/\s+/g, " ").trim();
}
