// AITP-02 `request_decision`: a product grid, radio or checkbox choice, or confirmation buttons;
// the user's choice goes back as a `decision` naming the request and the chosen option ids.
import { h, replaceChildren, uniqueId } from "../lib/dom.js";
import { safeImageUrl, safeLinkUrl } from "../lib/urls.js";
import { priceOf, stars } from "../lib/format.js";
import { requestLifecycle } from "./request.js";

const KINDS = ["products", "checkbox", "radio", "confirmation"];

/** Every offered option and variant by id, for naming the choices of an answer. */
export function optionsById(request) {
  const byId = new Map();
  for (const option of request.options || []) {
    byId.set(String(option.id), option);
    for (const variant of option.variants || []) byId.set(String(variant.id), variant);
  }
  return byId;
}

/** The chosen options of a decision, each {id, name, quantity}, named as the request offered them. */
export function chosenOptions(decision, request) {
  const byId = request ? optionsById(request) : new Map();
  return (decision.options || []).map((chosen) => {
    const offered = byId.get(String(chosen.id));
    return { id: chosen.id, name: (offered && offered.name) || chosen.name || String(chosen.id), quantity: chosen.quantity };
  });
}

/** "Red socks ×2, Blue socks": a decision's choices in one line. */
export function describeChoice(decision, request) {
  return chosenOptions(decision, request)
    .map(({ name, quantity }) => (quantity !== undefined && quantity !== 1 ? `${name} ×${quantity}` : name))
    .join(", ");
}

/** The decision's option entry: id, plus the name when known (SelectedOption allows nothing else). */
function selected(option, quantity) {
  const entry = { id: String(option.id) };
  if (typeof option.name === "string") entry.name = option.name;
  if (quantity !== undefined) entry.quantity = quantity;
  return entry;
}

export function renderRequestDecision(payload, part, message, ctx) {
  const request = payload.request_decision;
  const kind = KINDS.includes(request.type) ? request.type : "radio";
  const capability = (part.aitp && part.aitp.capability) || "aitp-02-decisions";
  const headingId = uniqueId("decision-title");
  const root = h("section", {
    class: `aitp-card aitp-request-decision aitp-kind-${kind}`,
    "data-renderer": "request_decision",
    "data-kind": kind,
    "data-request-id": request.id,
    "aria-labelledby": headingId,
  });
  const title = request.title || (kind === "products" ? "Products" : "Decision requested");
  root.append(h("h3", { class: "aitp-title", id: headingId }, title));
  if (request.description) root.append(h("p", { class: "aitp-description" }, request.description));

  const controls = h("fieldset", { class: "aitp-controls" }, h("legend", { class: "aitp-visually-hidden" }, title));
  const lifecycle = requestLifecycle(ctx, message, {
    root,
    controls,
    capability,
    answer: "decision",
    key: "request_decision_id",
    id: request.id,
    describe: (decision) => describeChoice(decision, request),
  });
  const decide = (button, options) => lifecycle.sendFrom(button, { request_decision_id: String(request.id), options });

  if (kind === "products") controls.append(productGrid(request, decide));
  else if (kind === "confirmation") controls.append(confirmationButtons(request, decide));
  else controls.append(...choiceList(request, kind, decide, lifecycle.alert));
  return root;
}

function productGrid(request, decide) {
  return h(
    "ul",
    { class: "aitp-products" },
    (request.options || []).map((option) => productCard(option, decide)),
  );
}

function productCard(product, decide) {
  const variants = [product, ...(product.variants || [])];
  const image = h("img", { class: "aitp-product-image", alt: "", loading: "lazy" });
  const heading = h("h4", { class: "aitp-product-name" });
  const rating = h("p", { class: "aitp-rating" });
  const description = h("p", { class: "aitp-product-description" });
  const price = h("p", { class: "aitp-price" });
  const quantityId = uniqueId("quantity");
  const quantity = h("input", {
    id: quantityId,
    type: "number",
    min: 1,
    step: 1,
    value: 1,
    inputmode: "numeric",
    required: true,
  });
  const buy = h("button", { type: "button", class: "aitp-button aitp-primary" }, "Buy");
  let chosen = product;

  // a variant inherits what it does not say from its product
  const show = (variant) => {
    chosen = variant;
    const pick = (key) => (variant[key] !== undefined ? variant[key] : product[key]);
    const name = pick("name") || String(variant.id);
    const imageUrl = safeImageUrl(pick("image_url"));
    image.hidden = !imageUrl;
    if (imageUrl) image.src = imageUrl;
    image.alt = name;
    const link = safeLinkUrl(pick("url"));
    heading.replaceChildren(link ? h("a", { href: link, target: "_blank", rel: "noopener noreferrer" }, name) : name);
    const stars5 = pick("five_star_rating");
    const reviews = pick("reviews_count");
    rating.hidden = stars5 === undefined && reviews === undefined;
    // the stars are drawn for the eye; a screen reader hears "Rated 4.2 out of 5 (132 reviews)"
    const hidden = (text) => h("span", { class: "aitp-visually-hidden" }, text);
    const score = stars5 !== undefined && [
      h("span", { class: "aitp-stars", "aria-hidden": "true" }, stars(stars5)),
      hidden("Rated"),
      ` ${Number(stars5).toFixed(1)}`,
      hidden(" out of 5"),
    ];
    replaceChildren(rating, score, reviews !== undefined && ` (${reviews} review${reviews === 1 ? "" : "s"})`);
    description.textContent = pick("description") || "";
    description.hidden = !description.textContent;
    const amount = priceOf(variant) || priceOf(product);
    price.textContent = amount || "";
    price.hidden = !amount;
    buy.setAttribute("aria-label", `Buy ${name}`);
  };
  show(product);

  const card = h(
    "li",
    { class: "aitp-product", "data-option-id": product.id },
    image,
    heading,
    rating,
    description,
    price,
  );
  // variant, quantity and buy sit at the bottom of the card, so they line up across a row of the grid
  const actions = h("div", { class: "aitp-product-actions" });
  if (variants.length > 1) {
    const selectId = uniqueId("variant");
    const select = h(
      "select",
      { id: selectId, class: "aitp-variant" },
      variants.map((variant) =>
        h("option", { value: variant.id }, variant.short_variant_name || variant.name || variant.id),
      ),
    );
    select.addEventListener("change", () => show(variants.find((v) => String(v.id) === select.value) || product));
    actions.append(h("div", { class: "aitp-field aitp-inline" }, h("label", { for: selectId }, "Variant"), select));
  }
  actions.append(h("div", { class: "aitp-field aitp-inline" }, h("label", { for: quantityId }, "Quantity"), quantity));
  buy.addEventListener("click", () => {
    if (!quantity.reportValidity()) return;
    decide(buy, [selected(chosen, Number(quantity.value))]);
  });
  actions.append(buy);
  card.append(actions);
  return card;
}

function choiceList(request, kind, decide, alert) {
  const group = uniqueId("choice");
  const inputType = kind === "checkbox" ? "checkbox" : "radio";
  const list = h(
    "ul",
    { class: "aitp-choices" },
    (request.options || []).map((option) => {
      const inputId = uniqueId("option");
      const imageUrl = safeImageUrl(option.image_url);
      return h(
        "li",
        { class: "aitp-choice" },
        h("input", { type: inputType, id: inputId, name: group, value: option.id }),
        h(
          "label",
          { for: inputId },
          imageUrl ? h("img", { src: imageUrl, alt: "", class: "aitp-choice-image" }) : null,
          h("span", { class: "aitp-choice-name" }, option.name || String(option.id)),
          option.description ? h("span", { class: "aitp-choice-description" }, option.description) : null,
        ),
      );
    }),
  );
  const submit = h(
    "button",
    { type: "button", class: "aitp-button aitp-primary" },
    kind === "checkbox" ? "Submit choices" : "Submit choice",
  );
  submit.addEventListener("click", () => {
    const checked = [...list.querySelectorAll("input:checked")].map((input) => input.value);
    if (checked.length === 0) {
      alert.show(new Error(kind === "checkbox" ? "Choose at least one option." : "Choose an option."));
      return;
    }
    const byId = optionsById(request);
    decide(
      submit,
      checked.map((id) => selected(byId.get(id) || { id })),
    );
  });
  return [list, submit];
}

function confirmationButtons(request, decide) {
  const offered =
    request.options && request.options.length
      ? request.options
      : [
          { id: "yes", name: "Yes" },
          { id: "no", name: "No" },
        ];
  const row = h("div", { class: "aitp-confirmation" });
  for (const option of offered) {
    const button = h(
      "button",
      { type: "button", class: "aitp-button", "data-option-id": option.id },
      option.name || String(option.id),
    );
    button.addEventListener("click", () => decide(button, [selected(option)]));
    row.append(button);
  }
  return row;
}
