// The event a signed delivery is, named the way its sender names it: what a mapping's match.events
// is compared with. GitHub and Linear add the body's action (`pull_request.opened`, `Issue.create`);
// Stripe and Standard Webhooks send the body's type (`invoice.paid`); GitLab and Shopify a header
// (`Push Hook`, `orders/create`); Slack the inner event's type (`app_mention`), else the body's.
import type { IncomingHttpHeaders } from 'node:http';
import { header } from './proof.ts';
import type { Scheme } from './verifier.ts';

/** Reads the event name of a delivery; undefined when the delivery names none. */
export type EventReader = (headers: IncomingHttpHeaders, payload: Record<string, unknown>) => string | undefined;

function field(value: unknown, name: string): string | undefined {
  if (value === null || typeof value !== 'object' || !Object.hasOwn(value, name)) return undefined;
  const v = (value as Record<string, unknown>)[name];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** `<name>.<action>` when the body has an action, else the name alone. */
function withAction(name: string | undefined, payload: Record<string, unknown>): string | undefined {
  if (name === undefined) return undefined;
  const action = field(payload, 'action');
  return action === undefined ? name : `${name}.${action}`;
}

const READERS: Partial<Record<Scheme, EventReader>> = {
  github: (headers, payload) => withAction(header(headers, 'x-github-event')?.trim() || undefined, payload),
  gitlab: (headers) => header(headers, 'x-gitlab-event')?.trim() || undefined,
  stripe: (_headers, payload) => field(payload, 'type'),
  'standard-webhooks': (_headers, payload) => field(payload, 'type'),
  shopify: (headers) => header(headers, 'x-shopify-topic')?.trim() || undefined,
  linear: (_headers, payload) => withAction(field(payload, 'type'), payload),
  slack: (_headers, payload) => field(payload.event, 'type') ?? field(payload, 'type'),
};

/** The schemes whose senders name their events, for messages. */
export const NAMING_SCHEMES: readonly Scheme[] = Object.keys(READERS) as Scheme[];

/** How `scheme`'s sender names its events; undefined for a scheme that names none (bearer, basic, hmac). */
export function eventReaderFor(scheme: Scheme): EventReader | undefined {
  return READERS[scheme];
}
