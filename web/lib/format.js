// Human-readable times, amounts, dates and ratings (the shell and the renderers share them).

/** A readable local time for a Unix timestamp in seconds: the time today, else date and time. */
export function formatTime(seconds) {
  const date = new Date(seconds * 1000);
  const sameDay = date.toDateString() === new Date().toDateString();
  return sameDay
    ? date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : date.toLocaleString([], { dateStyle: "medium", timeStyle: "short" });
}

/** "$199.50" for ISO currencies the browser knows, else "199.5 USDC". */
export function formatMoney(amount, currency) {
  if (amount === undefined || amount === null || amount === "") return currency ? String(currency) : "";
  const number = Number(amount);
  if (currency && /^[A-Z]{3}$/.test(currency) && Number.isFinite(number)) {
    try {
      return new Intl.NumberFormat(undefined, { style: "currency", currency }).format(number);
    } catch {
      // an unknown three-letter code: fall through to the plain form
    }
  }
  return [String(amount), currency].filter(Boolean).join(" ");
}

/** A local date and time for an ISO timestamp, or the text as given when it does not parse. */
export function formatDate(value) {
  const date = new Date(value);
  if (typeof value !== "string" || Number.isNaN(date.getTime())) return String(value ?? "");
  return date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

/** True when an ISO timestamp lies in the past. */
export function isPast(value) {
  const time = new Date(value).getTime();
  return typeof value === "string" && !Number.isNaN(time) && time < Date.now();
}

/** "★★★★☆" for a 0–5 rating (rounded to whole stars; the number is shown next to it). */
export function stars(rating) {
  const full = Math.max(0, Math.min(5, Math.round(Number(rating) || 0)));
  return "★".repeat(full) + "☆".repeat(5 - full);
}

/** The price of a product option: its embedded quote's first plan or payment option. */
export function priceOf(option) {
  const quote = option && option.quote;
  if (!quote) return null;
  const plan = (quote.payment_plans || quote.payment_options || [])[0];
  return plan ? formatMoney(plan.amount, plan.currency) : null;
}
