// AITP-02 `request_decision`: a product grid, radio or checkbox choice, or confirmation buttons;
// the user's choice goes back as a `decision` naming the request and the chosen option ids. Buying is two
// steps: Buy shows an order summary (seller, item, quantity, total), Confirm sends the decision; while it is on
// its way every Buy of the card is disabled. Once answered, the card shows what was chosen (after a reload too).
import { h, replaceChildren, uniqueId } from "../lib/dom.js";
import { picture } from "../lib/picture.js";
import { safeImageUrl, safeLinkUrl } from "../lib/urls.js";
import { formatMoney, priceOf, stars } from "../lib/format.js";
import { requestLifecycle } from "./request.js";
import { actorOf, labelOf } from "./thread.js";

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
  const title = request.title || (kind === "products" ? "Products" : "Please choose");
  root.append(h("h3", { class: "aitp-title", id: headingId }, title));
  if (request.description) root.append(h("p", { class: "aitp-description" }, request.description));

  const controls = h("fieldset", { class: "aitp-controls" }, h("legend", { class: "aitp-visually-hidden" }, title));
  let lifecycle = null; // the controls are built first, so an answer already in the thread can mark them
  const decide = answer; // (below: focus goes to what happened)
  let showChosen = () => {};
  if (kind === "products") {
    // who sells: the request's author, named as verified ("Sunny Socks · sunnysocks.example ✓")
    const seller = () => labelOf(ctx, actorOf(message));
    const grid = productGrid(request, seller, (...args) => sendOrder(...args));
    controls.append(grid.element, grid.summary);
    showChosen = grid.showChosen;
  } else if (kind === "confirmation") {
    controls.append(confirmationButtons(request, decide));
  } else {
    const [list, submit] = choiceList(request, kind, decide, () => lifecycle.alert);
    controls.append(list, submit);
    showChosen = (decision) => {
      const ids = new Set((decision.options || []).map((option) => String(option.id)));
      for (const input of list.querySelectorAll("input")) input.checked = ids.has(input.value);
    };
  }
  lifecycle = requestLifecycle(ctx, message, {
    root,
    controls,
    capability,
    answer: "decision",
    key: "request_decision_id",
    id: request.id,
    verb: "chose",
    describe: (decision) => describeChoice(decision, request),
    onAnswered: (decision) => showChosen(decision),
  });

  /** Send a confirmed order: every control of the card is disabled while it is on its way. */
  async function sendOrder(button, options) {
    controls.disabled = true;
    const posted = await answer(button, options);
    if (!posted && root.dataset.answered !== "true") {
      controls.disabled = false;
      button.focus();
    }
  }

  /** Send the decision from `button`; focus, lost when the button was disabled, goes to what happened. */
  async function answer(button, options) {
    const posted = await lifecycle.sendFrom(button, { request_decision_id: String(request.id), options });
    const active = document.activeElement;
    if (active && active !== document.body && !root.contains(active)) return posted; // the user went on elsewhere
    const note = root.querySelector(".aitp-notes [role=status]");
    if (root.dataset.answered === "true" && note) {
      // the card's controls are disabled now: the note saying what was chosen takes focus
      note.tabIndex = -1;
      note.focus();
    } else if (!button.matches(":disabled")) {
      button.focus(); // refused: the alert says why, the button is there to try again
    }
    return posted;
  }
  return root;
}

/** The grid of product cards and the order summary that Buy opens; `showChosen(decision)` marks an answer. */
function productGrid(request, seller, sendOrder) {
  const summary = orderSummary(seller, sendOrder);
  const cards = (request.options || []).map((option) => productCard(option, summary));
  const element = h(
    "ul",
    { class: "aitp-products" },
    cards.map((card) => card.element),
  );
  const showChosen = (decision) => {
    summary.hide();
    for (const chosen of decision.options || []) {
      for (const card of cards) card.choose(String(chosen.id), chosen.quantity);
    }
  };
  return { element, summary: summary.element, showChosen };
}

/** The amount and currency of an option's embedded quote (its first plan or payment option), or null. */
function unitPrice(option) {
  const quote = option && option.quote;
  const plan = quote && (quote.payment_plans || quote.payment_options || [])[0];
  const amount = plan ? Number(plan.amount) : NaN;
  return Number.isFinite(amount) ? { amount, currency: plan.currency } : null;
}

/** "Your order": who sells, what Buy chose, with its total, and Confirm / Change. */
function orderSummary(seller, sendOrder) {
  const headingId = uniqueId("order");
  const linesId = uniqueId("order-lines");
  const lines = h("dl", { class: "aitp-order-lines", id: linesId });
  const confirm = h(
    "button",
    { type: "button", class: "aitp-button aitp-primary", "aria-describedby": linesId },
    "Confirm order",
  );
  const change = h("button", { type: "button", class: "aitp-button" }, "Change");
  const element = h(
    "section",
    { class: "aitp-order", role: "group", "aria-labelledby": headingId, hidden: true },
    h("h4", { class: "aitp-order-title", id: headingId }, "Your order"),
    lines,
    h("div", { class: "aitp-actions" }, change, confirm),
  );
  let current = null; // {opener, options}
  const hide = () => {
    element.hidden = true;
    current = null;
  };
  change.addEventListener("click", () => {
    const opener = current && current.opener;
    hide();
    if (opener) opener.focus();
  });
  confirm.addEventListener("click", () => {
    if (current) sendOrder(confirm, current.options);
  });
  const row = (label, value, className) => h("div", { class: className }, h("dt", {}, label), h("dd", {}, value));
  return {
    element,
    hide,
    /** Show the order of `quantity` × `variant` (named `name`), opened by `opener`. */
    show({ opener, variant, product, name, quantity }) {
      const price = unitPrice(variant) || unitPrice(product);
      const each = price ? formatMoney(price.amount, price.currency) : null;
      const total = price ? formatMoney(Math.round(price.amount * quantity * 100) / 100, price.currency) : null;
      lines.replaceChildren(
        row("Seller", seller(), "aitp-order-seller"),
        row("Item", name, "aitp-order-item"),
        row("Quantity", each ? `${quantity} × ${each}` : String(quantity), "aitp-order-quantity"),
        row("Total", total || "Price given in the shop's quote", "aitp-order-total"),
      );
      current = { opener, options: [selected(variant, quantity)] };
      element.hidden = false;
      element.scrollIntoView({ block: "nearest" });
      confirm.focus();
    },
  };
}

function productCard(product, summary) {
  const variants = [product, ...(product.variants || [])];
  const image = picture({
    className: "aitp-product-image",
    placeholderClass: "aitp-image-placeholder aitp-product-placeholder",
    loading: "lazy",
  });
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
  let select = null;

  // a variant inherits what it does not say from its product
  const pick = (variant, key) => (variant[key] !== undefined ? variant[key] : product[key]);
  const nameOf = (variant) => pick(variant, "name") || String(variant.id);
  const show = (variant) => {
    chosen = variant;
    const name = nameOf(variant);
    image.show(safeImageUrl(pick(variant, "image_url")), name);
    const link = safeLinkUrl(pick(variant, "url"));
    heading.replaceChildren(link ? h("a", { href: link, target: "_blank", rel: "noopener noreferrer" }, name) : name);
    const stars5 = pick(variant, "five_star_rating");
    const reviews = pick(variant, "reviews_count");
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
    description.textContent = pick(variant, "description") || "";
    description.hidden = !description.textContent;
    const amount = priceOf(variant) || priceOf(product);
    price.textContent = amount || "";
    price.hidden = !amount;
    buy.setAttribute("aria-label", `Buy ${name}`);
  };
  show(product);

  const element = h(
    "li",
    { class: "aitp-product", "data-option-id": product.id },
    image.nodes,
    heading,
    rating,
    description,
    price,
  );
  // variant, quantity and buy sit at the bottom of the card, so they line up across a row of the grid
  const actions = h("div", { class: "aitp-product-actions" });
  if (variants.length > 1) {
    const selectId = uniqueId("variant");
    select = h(
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
    summary.show({ opener: buy, variant: chosen, product, name: nameOf(chosen), quantity: Number(quantity.value) });
  });
  actions.append(buy);
  element.append(actions);
  return {
    element,
    /** Show variant `id` of this product as the one chosen (with its quantity), if it is one of this card's. */
    choose(id, count) {
      const variant = variants.find((v) => String(v.id) === id);
      if (!variant) return;
      if (select) select.value = String(variant.id);
      show(variant);
      if (count !== undefined) quantity.value = String(count);
      element.dataset.chosen = "true";
      heading.append(h("span", { class: "aitp-badge aitp-chosen-badge" }, "Chosen"));
    },
  };
}

function choiceList(request, kind, decide, alertOf) {
  const group = uniqueId("choice");
  const inputType = kind === "checkbox" ? "checkbox" : "radio";
  const list = h(
    "ul",
    { class: "aitp-choices" },
    (request.options || []).map((option) => {
      const inputId = uniqueId("option");
      const image = picture({
        className: "aitp-choice-image",
        placeholderClass: "aitp-image-placeholder aitp-choice-placeholder",
      });
      image.show(safeImageUrl(option.image_url));
      return h(
        "li",
        { class: "aitp-choice" },
        h("input", { type: inputType, id: inputId, name: group, value: option.id }),
        h(
          "label",
          { for: inputId },
          image.nodes,
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
  // "Choose an option." is about the choice not made yet: making one answers it
  list.addEventListener("change", () => alertOf().clear());
  submit.addEventListener("click", () => {
    const checked = [...list.querySelectorAll("input:checked")].map((input) => input.value);
    if (checked.length === 0) {
      alertOf().show(new Error(kind === "checkbox" ? "Choose at least one option." : "Choose an option."));
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
