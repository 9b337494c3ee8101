// What this app can pay with. It holds no keys: paying posts the capability's payment message for the payee to
// check and confirm (or not). So it offers only the payment methods whose message it knows how to make; any
// other option of a quote is shown disabled with a plain reason, never as if it could be paid.

/** AITP-01 payment method types this app makes a payment message for. */
const PAYABLE_METHODS = new Set(["near_payment_channel"]);

/** Whether this app can pay with an AITP-01 payment method {type, token}. */
export function canPayWith(method) {
  return Boolean(method) && PAYABLE_METHODS.has(method.type);
}

/** Why an option cannot be paid here, in the customer's words. */
export const CANNOT_PAY = "Not available in this app";
