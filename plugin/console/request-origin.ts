// Where a browser's request came from, as the console judges it: over https or not (directly, or as a
// trusted proxy says in X-Forwarded-Proto), and whether its Origin is this console's own (a form or a
// script on another site can make a browser post here with the session's cookie; SameSite=Strict
// stops most of it, the Origin check the rest).
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { stripZone } from '../http/address-key.ts';
import { isTrusted, type TrustedProxies } from '../http/trusted-proxies.ts';

/** The first value of a header that may be repeated or a list ("https, http"). */
function firstValue(header: string | string[] | undefined): string | undefined {
  const text = Array.isArray(header) ? header[0] : header;
  return text?.split(',', 1)[0]!.trim().toLowerCase() || undefined;
}

/** Whether the socket peer is one of gateway.trustedProxies: only then are X-Forwarded-* believed. */
function fromTrustedProxy(req: IncomingMessage, trusted: TrustedProxies | undefined): boolean {
  const peer = req.socket?.remoteAddress;
  if (trusted === undefined || peer === undefined) return false;
  const bare = stripZone(peer);
  const family = isIP(bare);
  return family !== 0 && isTrusted(trusted, bare, family);
}

/** Whether the browser reached us over https: the cookie is then marked Secure. */
export function overHttps(req: IncomingMessage, trusted: TrustedProxies | undefined): boolean {
  if ((req.socket as { encrypted?: boolean } | undefined)?.encrypted === true) return true;
  return fromTrustedProxy(req, trusted) && firstValue(req.headers['x-forwarded-proto']) === 'https';
}

/** Whether the request's Origin names this server as the browser sees it (scheme, host and port). */
export function sameOrigin(req: IncomingMessage, trusted: TrustedProxies | undefined): boolean {
  const origin = req.headers.origin;
  if (typeof origin !== 'string' || origin === 'null') return false;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  const proxied = fromTrustedProxy(req, trusted);
  const host = (proxied ? firstValue(req.headers['x-forwarded-host']) : undefined) ?? req.headers.host?.toLowerCase();
  const scheme = overHttps(req, trusted) ? 'https:' : 'http:';
  return host !== undefined && url.protocol === scheme && url.host === host && url.pathname === '/';
}
