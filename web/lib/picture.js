/**
 * A picture from a message (a product photo, an option's image): an <img>, and a neutral placeholder of
 * the same box shown instead when the address does not give an image (a 404, an HTML page), so a card never
 * shows the browser's broken-image icon.
 */

import { h } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attributes, ...children) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  element.append(...children);
  return element;
}

/** A framed landscape: "a picture would be here". */
function pictureIcon() {
  return svg(
    "svg",
    { viewBox: "0 0 24 24", "aria-hidden": "true", focusable: "false", fill: "none", stroke: "currentColor" },
    svg("rect", { x: "3", y: "4", width: "18", height: "16", rx: "2", "stroke-width": "1.5" }),
    svg("circle", { cx: "9", cy: "9.5", r: "1.75", "stroke-width": "1.5" }),
    svg("path", { d: "M4 18l5-5 3 3 3-4 5 6", "stroke-width": "1.5", "stroke-linejoin": "round" }),
  );
}

/**
 * `{nodes, show(url, alt)}`: put `nodes` (the <img> and its placeholder) where the picture goes; `show`
 * loads `url` (a safe URL, or null for no picture and no placeholder either). `label`, when given, is the
 * placeholder's visible words ("Image not available"); without it the placeholder is decorative.
 */
export function picture({ className, placeholderClass, alt = "", loading = null, label = null }) {
  const img = h("img", { class: className, alt, loading, hidden: true });
  const placeholder = h(
    "span",
    { class: placeholderClass, hidden: true, "aria-hidden": label ? null : "true" },
    pictureIcon(),
    label && h("span", {}, label),
  );
  img.addEventListener("error", () => {
    if (!img.getAttribute("src")) return; // no picture asked for: nothing to stand in for
    img.hidden = true;
    placeholder.hidden = false;
  });
  return {
    nodes: [img, placeholder],
    show(url, name = alt) {
      placeholder.hidden = true;
      img.alt = name;
      img.hidden = !url;
      if (url) img.src = url;
      else img.removeAttribute("src");
    },
  };
}
