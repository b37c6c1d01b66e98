import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';

/** Compiled `gateway.trustedProxies`; build once per config load. */
export interface TrustedProxies {
  /** Whether `ip` (IPv4, IPv6, IPv4-mapped IPv6, optional zone id) is a trusted proxy. */
  contains(ip: string): boolean;
}

/** Longest key derived from a hop that is not a valid IP. */
const MAX_GARBAGE_KEY = 64;

/** Verdicts remembered per address: BlockList.check allocates on every call, and peers repeat. */
const VERDICT_CACHE_MAX = 1024;

class CompiledProxies implements TrustedProxies {
  readonly #list: BlockList;
  readonly #verdicts = new Map<string, boolean>();

  constructor(list: BlockList) {
    this.#list = list;
  }

  contains(ip: string): boolean {
    const bare = stripZone(ip);
    const family = isIP(bare);
    return family !== 0 && this.matches(bare, family);
  }

  /** `bare` must already be validated as family 4 or 6. */
  matches(bare: string, family: number): boolean {
    let verdict = this.#verdicts.get(bare);
    if (verdict === undefined) {
      verdict = this.#list.check(bare, family === 4 ? 'ipv4' : 'ipv6');
      if (this.#verdicts.size >= VERDICT_CACHE_MAX) this.#verdicts.clear();
      this.#verdicts.set(bare, verdict);
    }
    return verdict;
  }
}

function stripZone(ip: string): string {
  const pct = ip.indexOf('%');
  return pct < 0 ? ip : ip.slice(0, pct);
}

function isDecimal(text: string): boolean {
  if (text.length === 0 || text.length > 3) return false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

/**
 * Builds the trusted-proxy matcher from `gateway.trustedProxies` (IPs or
 * CIDRs, IPv4 or IPv6). Throws when an entry is invalid, naming it as
 * `gateway.trustedProxies[<i>]`. Returns undefined for undefined or [].
 */
export function compileTrustedProxies(list: readonly string[] | undefined): TrustedProxies | undefined {
  if (list === undefined) return undefined;
  if (!Array.isArray(list)) throw new Error('gateway.trustedProxies must be an array of IP addresses or CIDRs');
  if (list.length === 0) return undefined;
  const blocks = new BlockList();
  for (let i = 0; i < list.length; i++) {
    const entry: unknown = list[i];
    const fail = (): never => {
      throw new Error(
        `gateway.trustedProxies[${i}]: ${JSON.stringify(entry)} is not a valid IP address or CIDR`,
      );
    };
    if (typeof entry !== 'string') return fail();
    const slash = entry.indexOf('/');
    const address = stripZone(slash < 0 ? entry : entry.slice(0, slash));
    const family = isIP(address);
    if (family === 0) return fail();
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (slash < 0) {
      blocks.addAddress(address, type);
      continue;
    }
    const prefixText = entry.slice(slash + 1);
    if (!isDecimal(prefixText)) return fail();
    const prefix = Number(prefixText);
    if (prefix > (family === 4 ? 32 : 128)) return fail();
    blocks.addSubnet(address, prefix, type);
  }
  return new CompiledProxies(blocks);
}

// ---------------------------------------------------------------------------
// Address keys

/** Scratch space for IPv6 parsing; safe because parsing never yields. */
const groups = new Uint16Array(8);

function hexValue(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30;
  const lower = code | 0x20;
  if (lower >= 0x61 && lower <= 0x66) return lower - 0x61 + 10;
  return -1;
}

/** Writes dotted IPv4 text in ip[start, end) into groups[at], groups[at + 1]. */
function parseEmbeddedIPv4(ip: string, start: number, end: number, at: number): void {
  let value = 0;
  let octet = 0;
  for (let i = start; i < end; i++) {
    const c = ip.charCodeAt(i);
    if (c === 0x2e) {
      value = value * 256 + octet;
      octet = 0;
    } else {
      octet = octet * 10 + (c - 0x30);
    }
  }
  value = value * 256 + octet;
  groups[at] = value >>> 16;
  groups[at + 1] = value & 0xffff;
}

/**
 * Expands an IPv6 address that isIP() already accepted (zone removed) into
 * the 8 groups of `groups`, resolving `::` and a trailing dotted IPv4 part.
 */
function expandIPv6(ip: string): void {
  const end = ip.length;
  let count = 0;
  let gap = -1;
  let i = 0;
  if (end >= 2 && ip.charCodeAt(0) === 0x3a && ip.charCodeAt(1) === 0x3a) {
    gap = 0;
    i = 2;
  }
  while (i < end && count < 8) {
    let value = 0;
    let j = i;
    for (; j < end; j++) {
      const digit = hexValue(ip.charCodeAt(j));
      if (digit < 0) break;
      value = value * 16 + digit;
    }
    if (j < end && ip.charCodeAt(j) === 0x2e) {
      parseEmbeddedIPv4(ip, i, end, count);
      count += 2;
      break;
    }
    groups[count++] = value;
    if (j >= end) break;
    j++; // the ':' after the group
    if (j < end && ip.charCodeAt(j) === 0x3a) {
      gap = count;
      j++;
    }
    i = j;
  }
  if (gap >= 0) {
    const tail = count - gap;
    for (let k = tail - 1; k >= 0; k--) groups[8 - tail + k] = groups[gap + k]!;
    for (let k = gap; k < 8 - tail; k++) groups[k] = 0;
  }
}

function keyForIPv6(bare: string): string {
  // Fast path for the form Node reports on dual-stack sockets.
  if (bare.startsWith('::ffff:')) {
    const v4 = bare.slice(7);
    if (isIP(v4) === 4) return v4;
  }
  expandIPv6(bare);
  if (
    groups[0] === 0 && groups[1] === 0 && groups[2] === 0 &&
    groups[3] === 0 && groups[4] === 0 && groups[5] === 0xffff
  ) {
    const hi = groups[6]!;
    const lo = groups[7]!;
    return `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  }
  return `${groups[0]!.toString(16)}:${groups[1]!.toString(16)}:${groups[2]!.toString(16)}:${groups[3]!.toString(16)}::/64`;
}

/** Key for a validated address: bare (no zone) and family 4 or 6. */
function keyFor(bare: string, family: number): string {
  return family === 4 ? bare : keyForIPv6(bare);
}

/** Prefixed so a forged hop like `2001:db8::/64` can never share a key with a real address. */
function garbageKey(hop: string): string {
  return `invalid:${hop.length > MAX_GARBAGE_KEY ? hop.slice(0, MAX_GARBAGE_KEY) : hop}`;
}

/**
 * Rate-limit key for one IP string:
 *  - IPv4 is returned unchanged;
 *  - IPv4-mapped IPv6 (`::ffff:1.2.3.4`, any case, also hex or fully
 *    expanded forms) folds to the IPv4 address;
 *  - other IPv6 (zone id ignored) becomes its /64 prefix, always written as
 *    four lower-case hex groups, e.g. `2001:db8:0:2::/64`;
 *  - anything that is not an IP is returned truncated to 64 chars.
 */
export function addressKey(ip: string): string {
  const bare = stripZone(ip);
  const family = isIP(bare);
  return family === 0 ? garbageKey(ip) : keyFor(bare, family);
}

/** `bare` must already be validated as family 4 or 6. */
function isTrusted(trusted: TrustedProxies, bare: string, family: number): boolean {
  return trusted instanceof CompiledProxies ? trusted.matches(bare, family) : trusted.contains(bare);
}

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
