// Example transform (plain JavaScript, ESM): Stripe events -> a wake event for the main session.
//
// Install: copy this file to <configDir>/hooks/transforms/stripe.js and add the mapping
//   { id: "stripe", match: { path: "stripe" }, action: "wake", transform: { module: "stripe.js" },
//     verify: { scheme: "stripe", secret: "${STRIPE_WEBHOOK_SECRET}" } }
// Stripe signs each event with the endpoint's signing secret (whsec_..., the whole string is the
// secret); verify checks it instead of the hook token, which Stripe cannot send.
//
// Stripe posts an Event object: { id, object: "event", type, livemode, data: { object } }, where
// data.object is the invoice, payment intent or charge the event is about. Amounts are integers in
// the currency's minor unit (cents for USD), except for zero-decimal currencies such as JPY, whose
// amounts are whole units. Unknown event types are skipped (null -> hookgate answers 204), so you can
// subscribe the endpoint to more events than this file handles without waking anyone for them.

const UNKNOWN = 'unknown';
const MAX_TEXT = 200;

// https://docs.stripe.com/currencies -- "zero-decimal": the amount is the charge, no multiplication.
// UGX and ISK are absent on purpose: Stripe lists them as special cases that it still represents as
// two-decimal values (always ending in 00), so they divide by 100 like USD.
const ZERO_DECIMAL = new Set([
  'bif',
  'clp',
  'djf',
  'gnf',
  'jpy',
  'kmf',
  'krw',
  'mga',
  'pyg',
  'rwf',
  'vnd',
  'vuv',
  'xaf',
  'xof',
  'xpf',
]);
// Three-decimal currencies: amounts in thousandths (5.125 KWD is 5125; Stripe requires a final 0).
const THREE_DECIMAL = new Set(['bhd', 'jod', 'kwd', 'omr', 'tnd']);

/** A plain object, or an empty one for anything else (null, arrays, strings...). */
function obj(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? value : {};
}

/** A non-blank string from the payload, on one line and clipped; else undefined. */
function str(value, max = MAX_TEXT) {
  if (typeof value !== 'string') return undefined;
  const s = value.replace(/\s+/g, ' ').trim();
  if (s === '') return undefined;
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** The first of the values that is a non-blank string. */
function first(...values) {
  for (const v of values) {
    const s = str(v);
    if (s !== undefined) return s;
  }
  return undefined;
}

/**
 * "12.50 USD", "1200 JPY", "5.125 KWD" from an amount in minor units. Integer arithmetic, so large
 * amounts do not pick up floating-point noise.
 */
function formatAmount(amount, currency) {
  if (typeof amount !== 'number' || !Number.isFinite(amount)) return `${UNKNOWN} amount`;
  const code = str(currency, 10)?.toLowerCase();
  if (code === undefined) return `${amount} (minor units, currency ${UNKNOWN})`;
  const upper = code.toUpperCase();
  if (ZERO_DECIMAL.has(code)) return `${amount} ${upper}`;
  // Stripe amounts are integers; anything else is shown as received rather than guessed at.
  if (!Number.isInteger(amount)) return `${amount} minor units of ${upper}`;
  const digits = THREE_DECIMAL.has(code) ? 3 : 2;
  const scale = 10 ** digits;
  const sign = amount < 0 ? '-' : '';
  const abs = Math.abs(amount);
  const major = Math.floor(abs / scale);
  const minor = String(abs % scale).padStart(digits, '0');
  return `${sign}${major}.${minor} ${upper}`;
}

/** Email when the event carries one, else the customer id (string, or an expanded customer object). */
function customerOf(o, ...emails) {
  const customer = o.customer;
  const expanded = obj(customer);
  return first(...emails, expanded.email) ?? first(customer, expanded.id) ?? UNKNOWN;
}

function invoiceText(type, o) {
  const paid = type === 'invoice.paid';
  const amount = formatAmount(paid ? o.amount_paid : o.amount_due, o.currency);
  const parts = [
    `customer ${customerOf(o, o.customer_email)}`,
    `${paid ? 'paid' : 'due'} ${amount}`,
    `invoice ${first(o.number, o.id) ?? UNKNOWN}`,
  ];
  if (!paid && typeof o.attempt_count === 'number') parts.push(`attempt ${o.attempt_count}`);
  const link = str(o.hosted_invoice_url, 500);
  if (link) parts.push(link);
  return parts.join(', ');
}

function paymentIntentText(type, o) {
  const error = obj(o.last_payment_error);
  const method = obj(error.payment_method);
  const succeeded = type === 'payment_intent.succeeded';
  const parts = [
    `customer ${customerOf(o, o.receipt_email, obj(method.billing_details).email)}`,
    formatAmount(succeeded ? (o.amount_received ?? o.amount) : o.amount, o.currency),
    `payment ${first(o.id) ?? UNKNOWN}`,
  ];
  if (!succeeded) {
    const reason = first(error.message, error.decline_code, error.code);
    parts.push(`reason: ${reason ?? UNKNOWN}`);
  }
  return parts.join(', ');
}

function chargeRefundedText(o) {
  const refunded = formatAmount(o.amount_refunded, o.currency);
  const total = formatAmount(o.amount, o.currency);
  return [
    `customer ${customerOf(o, obj(o.billing_details).email, o.receipt_email)}`,
    `refunded ${refunded} of ${total}`,
    `payment ${first(o.payment_intent, obj(o.payment_intent).id, o.id) ?? UNKNOWN}`,
  ].join(', ');
}

const HANDLERS = {
  'invoice.paid': invoiceText,
  'invoice.payment_failed': invoiceText,
  'payment_intent.succeeded': paymentIntentText,
  'payment_intent.payment_failed': paymentIntentText,
  'charge.refunded': (_type, o) => chargeRefundedText(o),
};

export default function stripe(ctx) {
  const event = obj(ctx?.payload);
  const type = typeof event.type === 'string' ? event.type : undefined;
  if (type === undefined || !Object.prototype.hasOwnProperty.call(HANDLERS, type)) return null;
  const object = obj(obj(event.data).object);
  const mode = event.livemode === false ? ' [test mode]' : '';
  const text = `Stripe ${type}${mode}: ${HANDLERS[type](type, object)} (event ${first(event.id) ?? UNKNOWN})`;
  return { action: 'wake', name: 'Stripe', wakeMode: 'now', text };
}
