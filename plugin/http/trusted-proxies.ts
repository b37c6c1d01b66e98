// gateway.trustedProxies: which socket peers are proxies whose X-Forwarded-For is believed.
import { BlockList, isIP } from 'node:net';
import { stripZone } from './address-key.ts';

/** Compiled `gateway.trustedProxies`; build once per config load. */
export interface TrustedProxies {
  /** Whether `ip` (IPv4, IPv6, IPv4-mapped IPv6, optional zone id) is a trusted proxy. */
  contains(ip: string): boolean;
}

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
      throw new Error(`gateway.trustedProxies[${i}]: ${JSON.stringify(entry)} is not a valid IP address or CIDR`);
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

/** `bare` must already be validated as family 4 or 6. */
export function isTrusted(trusted: TrustedProxies, bare: string, family: number): boolean {
  return trusted instanceof CompiledProxies ? trusted.matches(bare, family) : trusted.contains(bare);
}
