// gateway.trustedProxies: which socket peers are proxies whose X-Forwarded-For is believed.
import { AddressList, compileAddressList } from './address-list.ts';

/** Compiled `gateway.trustedProxies`; build once per config load. */
export interface TrustedProxies {
  /** Whether `ip` (IPv4, IPv6, IPv4-mapped IPv6, optional zone id) is a trusted proxy. */
  contains(ip: string): boolean;
}

/**
 * Builds the trusted-proxy matcher from `gateway.trustedProxies` (IPs or
 * CIDRs, IPv4 or IPv6). Throws when an entry is invalid, naming it as
 * `gateway.trustedProxies[<i>]`. Returns undefined for undefined or [].
 */
export function compileTrustedProxies(list: readonly string[] | undefined): TrustedProxies | undefined {
  if (list === undefined) return undefined;
  if (!Array.isArray(list)) throw new Error('gateway.trustedProxies must be an array of IP addresses or CIDRs');
  const problems: string[] = [];
  const compiled = compileAddressList(list, 'gateway.trustedProxies', problems);
  if (problems.length) throw new Error(problems[0]);
  return compiled;
}

/** `bare` must already be validated as family 4 or 6. */
export function isTrusted(trusted: TrustedProxies, bare: string, family: number): boolean {
  return trusted instanceof AddressList ? trusted.matches(bare, family) : trusted.contains(bare);
}
