// Payment quotes: AITP-01 `quote` (payment_options with methods) and the hub-era legacy `quote`
// (payment_plans). Pay posts the capability's payment message for the chosen option: an AITP-01
// `payment` or a legacy `payment_authorization`. There is no wallet: nothing is signed or moved, so a
// payment is only a claim until the payee answers it. The card follows the quote's payment lifecycle
// (paymentState): "Payment sent, waiting for <payee> to confirm" until the payee's payment result, "Paid"
// only after a success, Pay enabled again after a failure. Pay asks for a confirmation first; a review still
// open when the quote is paid from elsewhere (the customer's other tab or device) closes. The customer
// reads amounts and plain words: no token, network or method names (they stay in the message, for developers);
// an option this app cannot pay with (lib/wallet.js) is shown disabled with the reason.
// Who is paid is named as the server verified it; a quote from an unverified actor (or sent by one in
// someone else's name) carries a warning before Pay: a warning, not a block, since a customer may know them.
import { h, uniqueId } from "../lib/dom.js";
import { formatDate, formatMoney, isPast } from "../lib/format.js";
import { CANNOT_PAY, canPayWith } from "../lib/wallet.js";
import { facts, paymentState } from "./payments.js";
import { requestLifecycle } from "./request.js";
import { actorOf, isVerified, labelOf, whoIs } from "./thread.js";

/**
 * Why paying this quote deserves a second look, as [lead, sentence], or null: its payee is not verified, or
 * an unverified actor sent it in a verified payee's name (a display name proves nothing; the quote's author
 * and payee are the facts).
 */
function trustWarning(ctx, sender, payee) {
  if (sender === ctx.me || !ctx.people) return null; // my own quote; or no profiles to judge by
  if (!isVerified(ctx, payee)) {
    return [
      "Unverified payee:",
      " this request does not come from a verified business. Do not pay unless you know who this is.",
    ];
  }
  if (sender !== payee && !isVerified(ctx, sender)) {
    return [
      "Unverified sender:",
      ` ${whoIs(ctx, sender)} is not verified and sent this quote in the name of ${whoIs(ctx, payee)}. ` +
        "Do not pay unless you know who this is.",
    ];
  }
  return null;
}

/** The warning as shown on the card and in the review (the same words in both). */
function warningNote(warning, attributes = {}) {
  return h(
    "p",
    { class: "aitp-warning", ...attributes },
    h("span", { class: "aitp-warning-icon", "aria-hidden": "true" }, "⚠"),
    h("strong", {}, warning[0]),
    warning[1],
  );
}

/** Who the review says is paid: "Sunny Socks (sunnysocks.example ✓)" when verified, else the name. */
function payeeWords(ctx, payee) {
  if (payee === ctx.me || !ctx.people || typeof ctx.people.payee !== "function") return whoIs(ctx, payee);
  return ctx.people.payee(payee);
}

/**
 * What the card says and whether Pay is enabled, for a payment state, the payee's name and an expiry. Only the
 * payee's payment result makes a payment "Paid": until then it was sent, not received.
 */
function standing({ state, payer, message }, payee, expired) {
  const said = message ? ` ${message}` : "";
  const because = message ? `: ${message.replace(/[.!]+$/, "")}` : "";
  const by = payer && payer !== "you" ? ` by ${payer}` : "";
  switch (state) {
    case "paid":
      return { open: false, text: `Paid${by}.${said}`, kind: "done" };
    case "pending":
      return { open: false, text: `Payment sent${by}, ${payee} says it is pending.${said}` };
    case "authorized":
      return { open: false, text: `Payment sent${by}, waiting for ${payee} to confirm.` };
    case "failed": {
      const failed = `${payee} reports the payment failed${because}.`;
      if (expired) return { open: false, text: `${failed} This quote has expired.`, kind: "warning" };
      return { open: true, text: `${failed} You can pay again.`, kind: "warning" };
    }
    default:
      return expired ? { open: false, text: "This quote has expired.", kind: "warning" } : { open: true, text: "" };
  }
}

/** The offers of a quote, each {label, amount, currency, unavailable (a reason, or null), answer(ctx) → body}. */
function offersOf(quote, legacy) {
  if (legacy) {
    return (quote.payment_plans || []).map((plan) => ({
      label: `${formatMoney(plan.amount, plan.currency)}${plan.plan_type ? ` · ${plan.plan_type.replaceAll("-", " ")}` : ""}`,
      amount: plan.amount,
      currency: plan.currency,
      answer: (ctx) => ({
        quote_id: String(quote.quote_id),
        result: "success",
        timestamp: new Date().toISOString(),
        details: [
          {
            network: "NEAR",
            token_type: "USDC",
            amount: Number(plan.amount),
            account_id: ctx.me,
            transaction_id: `ui-${crypto.randomUUID()}`,
          },
        ],
      }),
    }));
  }
  const offers = [];
  for (const option of quote.payment_options || []) {
    const methods = option.payment_methods || [];
    // one offer per amount: the first method this app can pay with, else the option shown as not payable here
    const method = methods.find(canPayWith);
    offers.push({
      label: formatMoney(option.amount, option.currency),
      amount: option.amount,
      currency: option.currency,
      unavailable: method ? null : CANNOT_PAY,
      answer: (ctx) => ({
        quote_id: String(quote.quote_id),
        payment_method: {
          type: method.type,
          token: method.token,
          channel_id: `ui-${crypto.randomUUID()}`,
          ...(option.amount !== undefined ? { amount: String(option.amount) } : {}),
          currency: option.currency,
        },
        payer_id: ctx.me,
        timestamp: new Date().toISOString(),
        // the reference UI has no wallet: it says so instead of faking a signature
        payer_signature: "unsigned:reference-ui",
      }),
    });
  }
  return offers;
}

export function renderQuote(payload, part, message, ctx) {
  const quote = payload.quote;
  const legacy = Array.isArray(quote.payment_plans) || (part.aitp && part.aitp.capability === "aitp-legacy-payments");
  const capability = (part.aitp && part.aitp.capability) || (legacy ? "aitp-legacy-payments" : "aitp-01-payments");
  const payee = legacy ? quote.payee_id : quote.merchant_id;
  const sender = actorOf(message);
  // who is paid: the payee the quote names, else whoever sent it
  const paid = typeof payee === "string" && payee ? payee : sender;
  // a payee outside the thread has no profile here yet: ask the server who it is (the card is drawn again)
  if (ctx.people && typeof ctx.people.lookup === "function") ctx.people.lookup(paid);
  const warning = trustWarning(ctx, sender, paid);
  const expiry = legacy ? quote.valid_until : quote.expiration;
  const offers = offersOf(quote, legacy);
  const headingId = uniqueId("quote-title");

  const root = h("section", {
    class: "aitp-card aitp-quote",
    "data-renderer": "quote",
    "data-quote-id": quote.quote_id,
    "data-model": legacy ? "legacy" : "aitp-01",
    "aria-labelledby": headingId,
  });
  root.append(
    h("p", { class: "aitp-eyebrow" }, "Quote"),
    h("h3", { class: "aitp-title", id: headingId }, quote.description || `Quote ${quote.quote_id}`),
  );
  const first = offers.find((offer) => !offer.unavailable);
  if (first) root.append(h("p", { class: "aitp-amount" }, formatMoney(first.amount, first.currency)));
  root.append(
    facts([
      [legacy ? "Payee" : "Merchant", payee && labelOf(ctx, payee)],
      ["Sent by", sender !== paid || !payee ? labelOf(ctx, sender) : null],
      [expiry && isPast(expiry) ? "Expired" : "Expires", expiry && formatDate(expiry)],
    ]),
  );

  const controls = h(
    "fieldset",
    { class: "aitp-controls" },
    h("legend", { class: "aitp-visually-hidden" }, "Payment options"),
  );
  const group = uniqueId("offer");
  const list = h(
    "ul",
    { class: "aitp-choices aitp-offers" },
    offers.map((offer, index) => {
      const id = uniqueId("offer-option");
      const reason =
        offer.unavailable && h("span", { class: "aitp-offer-reason", id: uniqueId("offer-reason") }, offer.unavailable);
      return h(
        "li",
        { class: `aitp-choice${reason ? " aitp-unavailable" : ""}` },
        h("input", {
          type: "radio",
          id,
          name: group,
          value: String(index),
          checked: offer === first,
          disabled: Boolean(reason),
          "aria-describedby": reason ? reason.id : null,
        }),
        h("label", { for: id }, offer.label),
        reason,
      );
    }),
  );
  // before Pay, where it is read first; Pay is described by it too
  const cardWarning = warning && warningNote(warning, { id: uniqueId("quote-warning"), "data-warning": "card" });
  const pay = h(
    "button",
    { type: "button", class: "aitp-button aitp-primary", "aria-describedby": cardWarning ? cardWarning.id : null },
    first ? `Pay ${formatMoney(first.amount, first.currency)}` : "Pay",
  );
  const chosenOffer = () => offers[Number(list.querySelector("input:checked")?.value)] ?? first;
  list.addEventListener("change", () => {
    const offer = chosenOffer();
    pay.textContent = `Pay ${formatMoney(offer.amount, offer.currency)}`;
    review.hidden = true;
  });
  // the review step: what is paid, to whom and how, before anything is sent
  const reviewText = h("p", { class: "aitp-review-text", id: uniqueId("review") });
  const reviewWarning = warning && warningNote(warning, { id: uniqueId("review-warning"), "data-warning": "review" });
  const confirm = h(
    "button",
    {
      type: "button",
      class: "aitp-button aitp-primary",
      "aria-describedby": [reviewText.id, reviewWarning?.id].filter(Boolean).join(" "),
    },
    "Confirm payment",
  );
  const cancel = h("button", { type: "button", class: "aitp-button" }, "Cancel");
  const review = h(
    "div",
    { class: "aitp-review", role: "group", "aria-label": "Review the payment", hidden: true },
    reviewText,
    reviewWarning,
    h("div", { class: "aitp-actions" }, cancel, confirm),
  );
  controls.append(...[list, cardWarning, pay, review].filter(Boolean));
  const closeReview = () => {
    if (review.hidden) return;
    const focused = review.contains(document.activeElement);
    review.hidden = true;
    if (focused) {
      // not to <body>: to the card, whose status says why the review went
      root.tabIndex = -1;
      root.focus();
    }
  };
  const answerType = legacy ? "payment_authorization" : "payment";
  const expired = Boolean(expiry && isPast(expiry));
  const lifecycle = requestLifecycle(ctx, message, {
    root,
    controls,
    capability,
    answer: answerType,
    key: "quote_id",
    id: quote.quote_id,
    follow: (messages) => {
      const now = paymentState(messages, quote.quote_id);
      root.dataset.paymentState = now.state;
      const shown = standing({ ...now, payer: now.payer && whoIs(ctx, now.payer) }, whoIs(ctx, paid), expired);
      if (shown.open) pay.disabled = false; // a retry: the last Pay click left it disabled
      // paid meanwhile, e.g. by this customer in another tab (its payment arrives live): the review of a
      // payment that can no longer be made closes, and the card says where the payment stands
      else closeReview();
      // nothing this app can pay with: no Pay as if it could (each option says why)
      return { ...shown, open: shown.open && Boolean(first) };
    },
  });
  pay.addEventListener("click", () => {
    const offer = chosenOffer();
    // named as verified now (not when the card was drawn: the payee's identity may have arrived since)
    reviewText.replaceChildren(
      `You are paying ${formatMoney(offer.amount, offer.currency)} to `,
      payeeWords(ctx, paid),
      ".",
    );
    review.hidden = false;
    confirm.disabled = false; // a retry after a failed payment: the last confirmation left it disabled
    confirm.focus();
  });
  cancel.addEventListener("click", () => {
    review.hidden = true;
    pay.focus();
  });
  confirm.addEventListener("click", async () => {
    pay.disabled = true;
    const posted = await lifecycle.sendFrom(confirm, chosenOffer().answer(ctx));
    if (posted) {
      review.hidden = true;
      root.tabIndex = -1;
      root.focus(); // the buttons are disabled now; the card says where the payment stands
    } else {
      pay.disabled = false;
    }
  });
  return root;
}
