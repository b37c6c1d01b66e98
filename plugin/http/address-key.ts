// The key an address is counted under by the auth-failure limiter: IPv4 as is, IPv4-mapped IPv6
// folded to IPv4, other IPv6 by its /64, anything else marked as not an address.
import { isIP } from 'node:net';

/** Longest key derived from a hop that is not a valid IP. */
const MAX_GARBAGE_KEY = 64;

export function stripZone(ip: string): string {
  const pct = ip.indexOf('%');
  return pct < 0 ? ip : ip.slice(0, pct);
}

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
    groups[0] === 0 &&
    groups[1] === 0 &&
    groups[2] === 0 &&
    groups[3] === 0 &&
    groups[4] === 0 &&
    groups[5] === 0xffff
  ) {
    const hi = groups[6]!;
    const lo = groups[7]!;
    return `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  }
  return `${groups[0]!.toString(16)}:${groups[1]!.toString(16)}:${groups[2]!.toString(16)}:${groups[3]!.toString(16)}::/64`;
}

/** Key for a validated address: bare (no zone) and family 4 or 6. */
export function keyFor(bare: string, family: number): string {
  return family === 4 ? bare : keyForIPv6(bare);
}

/** Prefixed so a forged hop like `2001:db8::/64` can never share a key with a real address. */
export function garbageKey(hop: string): string {
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
