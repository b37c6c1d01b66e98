// The client address of a request: the socket peer, or the rightmost untrusted X-Forwarded-For hop
// when the peer is a trusted proxy, as the key the limiter counts it under.
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { garbageKey, keyFor, stripZone } from './address-key.ts';
import { isTrusted, type TrustedProxies } from './trusted-proxies.ts';

/**
 * Walks X-Forwarded-For from the right past trusted proxies. Returns the key
 * of the first untrusted hop, the (truncated) text of the first hop that is
 * not an IP, or the key of the leftmost hop when all are trusted. Empty
 * entries (e.g. "a,,b" or a trailing comma) are skipped. Returns undefined
 * when the header has no non-empty entry.
 */
function walkForwardedFor(xff: string, trusted: TrustedProxies): string | undefined {
  let leftmost: string | undefined;
  let leftmostFamily = 0;
  let end = xff.length;
  while (end > 0) {
    const comma = xff.lastIndexOf(',', end - 1);
    const hop = xff.slice(comma + 1, end).trim();
    end = comma < 0 ? 0 : comma;
    if (hop.length === 0) continue;
    const bare = stripZone(hop);
    const family = isIP(bare);
    if (family === 0) return garbageKey(hop);
    if (!isTrusted(trusted, bare, family)) return keyFor(bare, family);
    leftmost = bare;
    leftmostFamily = family;
  }
  return leftmost === undefined ? undefined : keyFor(leftmost, leftmostFamily);
}

/**
 * The address key that auth rate limiting counts against. Starts from the
 * socket peer; only when the peer is a trusted proxy is X-Forwarded-For
 * consulted (see walkForwardedFor). Returns 'unknown' when the socket has no
 * remote address any more.
 */
export function clientAddress(req: IncomingMessage, trusted: TrustedProxies | undefined): string {
  const peer = req.socket?.remoteAddress;
  if (peer === undefined || peer.length === 0) return 'unknown';
  const bare = stripZone(peer);
  const family = isIP(bare);
  if (family === 0) return garbageKey(peer);
  if (trusted === undefined || !isTrusted(trusted, bare, family)) return keyFor(bare, family);
  const header = req.headers['x-forwarded-for'];
  const xff = header === undefined || typeof header === 'string' ? header : header.join(',');
  if (xff === undefined) return keyFor(bare, family);
  return walkForwardedFor(xff, trusted) ?? keyFor(bare, family);
}
