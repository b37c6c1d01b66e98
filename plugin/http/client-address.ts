// The client address of a request: the socket peer, or the rightmost untrusted X-Forwarded-For hop
// when the peer is a trusted proxy. clientAddress gives the key the limiter counts it under (IPv6 by
// its /64); clientSource the full address, which the source allowlists compare.
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { garbageKey, keyFor, stripZone } from './address-key.ts';
import { isTrusted, type TrustedProxies } from './trusted-proxies.ts';

/** What the walk makes of the address it settles on, or of a hop that is no address. */
interface Resolution<T> {
  address(bare: string, family: number): T;
  garbage(hop: string): T;
}

/**
 * Walks X-Forwarded-For from the right past trusted proxies. Resolves the
 * first untrusted hop, the first hop that is not an IP (as garbage), or the
 * leftmost hop when all are trusted. Empty entries (e.g. "a,,b" or a
 * trailing comma) are skipped. Returns undefined when the header has no
 * non-empty entry.
 */
function walkForwardedFor<T>(xff: string, trusted: TrustedProxies, as: Resolution<T>): T | undefined {
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
    if (family === 0) return as.garbage(hop);
    if (!isTrusted(trusted, bare, family)) return as.address(bare, family);
    leftmost = bare;
    leftmostFamily = family;
  }
  return leftmost === undefined ? undefined : as.address(leftmost, leftmostFamily);
}

/** Starts from the socket peer; only when the peer is a trusted proxy is X-Forwarded-For consulted. */
function resolveClient<T>(req: IncomingMessage, trusted: TrustedProxies | undefined, as: Resolution<T>, none: T): T {
  const peer = req.socket?.remoteAddress;
  if (peer === undefined || peer.length === 0) return none;
  const bare = stripZone(peer);
  const family = isIP(bare);
  if (family === 0) return as.garbage(peer);
  if (trusted === undefined || !isTrusted(trusted, bare, family)) return as.address(bare, family);
  const header = req.headers['x-forwarded-for'];
  const xff = header === undefined || typeof header === 'string' ? header : header.join(',');
  if (xff === undefined) return as.address(bare, family);
  return walkForwardedFor(xff, trusted, as) ?? as.address(bare, family);
}

const AS_KEY: Resolution<string> = { address: keyFor, garbage: garbageKey };

/**
 * The address key that auth rate limiting counts against (see resolveClient). Returns 'unknown' when
 * the socket has no remote address any more.
 */
export function clientAddress(req: IncomingMessage, trusted: TrustedProxies | undefined): string {
  return resolveClient(req, trusted, AS_KEY, 'unknown');
}

/** A client's full address, without zone, and its family (4 or 6). */
export interface SourceAddress {
  readonly bare: string;
  readonly family: number;
}

const AS_SOURCE: Resolution<SourceAddress | undefined> = {
  address: (bare, family) => ({ bare, family }),
  garbage: () => undefined,
};

/**
 * The same client as clientAddress, as its full address (the allowlists compare it whole); undefined
 * when it is no address (a hop that is not an IP, a closed socket): no list admits it.
 */
export function clientSource(req: IncomingMessage, trusted: TrustedProxies | undefined): SourceAddress | undefined {
  return resolveClient(req, trusted, AS_SOURCE, undefined);
}
