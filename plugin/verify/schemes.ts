// One verifier per sender scheme. Each checks the proof over the raw body as received; a signed
// timestamp is checked only once the signature is authentic, so a forgery is never reported as late.
import type { IncomingHttpHeaders } from 'node:http';
import { bearerToken } from '../auth/token.ts';
import { anyKeyMatches, decode, header, hmac, sameSecret, seconds, withinWindow, type Algorithm } from './proof.ts';
import type { Scheme, SignedRequest, Verifier, VerifyOutcome } from './verifier.ts';

/** The generic hmac scheme's own keys, as configured. */
export interface HmacSettings {
  header?: string;
  algorithm?: Algorithm;
  encoding?: 'hex' | 'base64';
  prefix?: string;
  timestampHeader?: string;
}

export interface SchemeOptions extends HmacSettings {
  /** HMAC keys, or the credentials for gitlab, bearer and basic: one per configured secret. */
  keys: readonly Buffer[];
  toleranceSeconds: number;
  username?: string;
}

const OK: VerifyOutcome = Object.freeze({ ok: true });
const INVALID: VerifyOutcome = Object.freeze({ ok: false, expired: false });
const EXPIRED: VerifyOutcome = Object.freeze({ ok: false, expired: true });
/** A wrong secret presented as it is: the limiter may forgive it once a rotation makes it valid. */
const wrongSecret = (presented: string): VerifyOutcome => ({ ok: false, expired: false, presented });

type HeaderDeliveryId = NonNullable<Verifier['headerDeliveryId']>;

const noDeliveryId = (): undefined => undefined;
const headerId =
  (...names: string[]) =>
  (headers: IncomingHttpHeaders): string | undefined => {
    for (const name of names) {
      const v = header(headers, name)?.trim();
      if (v) return v;
    }
    return undefined;
  };
const payloadId =
  (field: string) =>
  (_headers: IncomingHttpHeaders, payload: Record<string, unknown>): string | undefined => {
    const v = Object.hasOwn(payload, field) ? payload[field] : undefined;
    return typeof v === 'string' && v ? v : undefined;
  };

/** A digest of the body alone, sent as `<prefix><encoded>` in one header (GitHub, Shopify, Linear). */
function bodyDigest(
  scheme: Scheme,
  o: SchemeOptions,
  sent: { header: string; prefix: string; encoding: 'hex' | 'base64'; algorithm: Algorithm },
  deliveryId: HeaderDeliveryId,
): Verifier {
  return {
    scheme,
    proofHeaders: [sent.header],
    verify({ headers, body }: SignedRequest): VerifyOutcome {
      const value = header(headers, sent.header);
      if (value === undefined || !value.startsWith(sent.prefix)) return INVALID;
      const provided = [decode(value.slice(sent.prefix.length), sent.encoding)];
      return anyKeyMatches(o.keys, provided, (key) => hmac(sent.algorithm, key, body)) ? OK : INVALID;
    },
    deliveryId,
    headerDeliveryId: deliveryId,
  };
}

function stripe(o: SchemeOptions): Verifier {
  return {
    scheme: 'stripe',
    proofHeaders: ['stripe-signature'],
    verify({ headers, body, nowMs }) {
      const value = header(headers, 'stripe-signature');
      if (value === undefined) return INVALID;
      let t: string | undefined;
      const v1: Buffer[] = [];
      for (const item of value.split(',')) {
        const eq = item.indexOf('=');
        const name = item.slice(0, eq).trim();
        if (name === 't') t = item.slice(eq + 1).trim();
        else if (name === 'v1') v1.push(decode(item.slice(eq + 1), 'hex'));
      }
      const sentAt = seconds(t);
      if (sentAt === undefined || v1.length === 0) return INVALID;
      if (!anyKeyMatches(o.keys, v1, (key) => hmac('sha256', key, `${t}.`, body))) return INVALID;
      return withinWindow(sentAt, nowMs, o.toleranceSeconds) ? OK : EXPIRED;
    },
    deliveryId: payloadId('id'),
  };
}

function slack(o: SchemeOptions): Verifier {
  return {
    scheme: 'slack',
    proofHeaders: ['x-slack-signature'],
    verify({ headers, body, nowMs }) {
      const value = header(headers, 'x-slack-signature');
      const ts = header(headers, 'x-slack-request-timestamp');
      const sentAt = seconds(ts);
      if (value === undefined || !value.startsWith('v0=') || sentAt === undefined) return INVALID;
      const provided = [decode(value.slice(3), 'hex')];
      if (!anyKeyMatches(o.keys, provided, (key) => hmac('sha256', key, `v0:${ts!.trim()}:`, body))) return INVALID;
      return withinWindow(sentAt, nowMs, o.toleranceSeconds) ? OK : EXPIRED;
    },
    deliveryId: payloadId('event_id'),
  };
}

const standardWebhookId = headerId('webhook-id', 'svix-id');

/** Standard Webhooks, and Svix under its own header names. */
function standardWebhooks(o: SchemeOptions): Verifier {
  return {
    scheme: 'standard-webhooks',
    proofHeaders: ['webhook-signature', 'svix-signature'],
    verify({ headers, body, nowMs }) {
      const id = header(headers, 'webhook-id') ?? header(headers, 'svix-id');
      const ts = header(headers, 'webhook-timestamp') ?? header(headers, 'svix-timestamp');
      const value = header(headers, 'webhook-signature') ?? header(headers, 'svix-signature');
      const sentAt = seconds(ts);
      if (id === undefined || sentAt === undefined || value === undefined) return INVALID;
      const provided: Buffer[] = [];
      for (const entry of value.split(' ')) {
        if (entry.startsWith('v1,')) provided.push(decode(entry.slice(3), 'base64'));
      }
      if (!anyKeyMatches(o.keys, provided, (key) => hmac('sha256', key, `${id}.${ts!.trim()}.`, body))) return INVALID;
      return withinWindow(sentAt, nowMs, o.toleranceSeconds) ? OK : EXPIRED;
    },
    deliveryId: standardWebhookId,
    headerDeliveryId: standardWebhookId,
  };
}

function linear(o: SchemeOptions): Verifier {
  const verifier = bodyDigest(
    'linear',
    o,
    { header: 'linear-signature', prefix: '', encoding: 'hex', algorithm: 'sha256' },
    headerId('linear-delivery'),
  );
  return {
    ...verifier,
    // Linear signs its timestamp inside the payload, in milliseconds.
    fresh(payload, nowMs) {
      const ms = Object.hasOwn(payload, 'webhookTimestamp') ? payload.webhookTimestamp : undefined;
      return typeof ms === 'number' && withinWindow(ms / 1000, nowMs, o.toleranceSeconds);
    },
  };
}

/** A shared secret sent as it is, in a header of the scheme's (GitLab's token, a bearer token). */
function sharedSecret(
  scheme: Scheme,
  o: SchemeOptions,
  proofHeader: string,
  read: (headers: IncomingHttpHeaders) => string | undefined,
  deliveryId: HeaderDeliveryId,
): Verifier {
  return {
    scheme,
    proofHeaders: [proofHeader],
    verify({ headers }) {
      const sent = read(headers);
      if (sent === undefined) return INVALID;
      let matched = false;
      for (const key of o.keys) if (sameSecret(sent, key)) matched = true;
      return matched ? OK : wrongSecret(sent);
    },
    accepted: () => o.keys.map((key) => key.toString('utf8')),
    deliveryId,
    headerDeliveryId: deliveryId,
  };
}

function basic(o: SchemeOptions): Verifier {
  const username = Buffer.from(o.username ?? '', 'utf8');
  return {
    scheme: 'basic',
    proofHeaders: ['authorization'],
    verify({ headers }) {
      const value = header(headers, 'authorization');
      const m = value === undefined ? null : /^\s*basic\s+(\S+)\s*$/i.exec(value);
      if (!m) return INVALID;
      const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon < 0) return INVALID;
      const userOk = sameSecret(decoded.slice(0, colon), username);
      let secretOk = false;
      for (const key of o.keys) if (sameSecret(decoded.slice(colon + 1), key)) secretOk = true;
      return userOk && secretOk ? OK : wrongSecret(decoded);
    },
    accepted: () => o.keys.map((key) => `${o.username ?? ''}:${key.toString('utf8')}`),
    deliveryId: noDeliveryId,
    headerDeliveryId: noDeliveryId,
  };
}

/** Generic: a configured header, algorithm, encoding and prefix, optionally over `<timestamp>.<body>`. */
function genericHmac(o: SchemeOptions): Verifier {
  const name = o.header!.toLowerCase();
  const prefix = o.prefix ?? '';
  const algorithm = o.algorithm ?? 'sha256';
  const encoding = o.encoding ?? 'hex';
  const tsHeader = o.timestampHeader?.toLowerCase();
  return {
    scheme: 'hmac',
    proofHeaders: [name],
    verify({ headers, body, nowMs }) {
      const value = header(headers, name);
      if (value === undefined || !value.startsWith(prefix)) return INVALID;
      const provided = [decode(value.slice(prefix.length), encoding)];
      if (tsHeader === undefined) {
        return anyKeyMatches(o.keys, provided, (key) => hmac(algorithm, key, body)) ? OK : INVALID;
      }
      const ts = header(headers, tsHeader)?.trim();
      const sentAt = seconds(ts);
      if (sentAt === undefined) return INVALID;
      if (!anyKeyMatches(o.keys, provided, (key) => hmac(algorithm, key, `${ts}.`, body))) return INVALID;
      return withinWindow(sentAt, nowMs, o.toleranceSeconds) ? OK : EXPIRED;
    },
    deliveryId: noDeliveryId,
    headerDeliveryId: noDeliveryId,
  };
}

export function createVerifier(scheme: Scheme, o: SchemeOptions): Verifier {
  switch (scheme) {
    case 'github':
      return bodyDigest(
        scheme,
        o,
        { header: 'x-hub-signature-256', prefix: 'sha256=', encoding: 'hex', algorithm: 'sha256' },
        headerId('x-github-delivery'),
      );
    case 'shopify':
      return bodyDigest(
        scheme,
        o,
        { header: 'x-shopify-hmac-sha256', prefix: '', encoding: 'base64', algorithm: 'sha256' },
        headerId('x-shopify-webhook-id'),
      );
    case 'stripe':
      return stripe(o);
    case 'slack':
      return slack(o);
    case 'standard-webhooks':
      return standardWebhooks(o);
    case 'linear':
      return linear(o);
    case 'gitlab':
      return sharedSecret(
        scheme,
        o,
        'x-gitlab-token',
        (h) => header(h, 'x-gitlab-token'),
        headerId('idempotency-key', 'x-gitlab-event-uuid'),
      );
    case 'bearer':
      return sharedSecret(
        scheme,
        o,
        'authorization',
        (h) => {
          const v = header(h, 'authorization');
          return v === undefined ? undefined : bearerToken(v);
        },
        noDeliveryId,
      );
    case 'basic':
      return basic(o);
    case 'hmac':
      return genericHmac(o);
  }
}
