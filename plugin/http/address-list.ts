// A list of IP addresses and CIDR blocks (IPv4 and IPv6), compiled once per config load: the trusted
// proxies (gateway.trustedProxies) and the source allowlists (hooks.allowedSources, a mapping's).
import { BlockList, isIP } from 'node:net';
import { stripZone } from './address-key.ts';

/** Verdicts remembered per address: BlockList.check allocates on every call, and peers repeat. */
const VERDICT_CACHE_MAX = 1024;

export class AddressList {
  readonly #list: BlockList;
  readonly #verdicts = new Map<string, boolean>();

  constructor(list: BlockList) {
    this.#list = list;
  }

  /** Whether `ip` (IPv4, IPv6, IPv4-mapped IPv6, optional zone id) is on the list. */
  contains(ip: string): boolean {
    const bare = stripZone(ip);
    const family = isIP(bare);
    return family !== 0 && this.matches(bare, family);
  }

  /** `bare` must already be validated as family 4 or 6 (BlockList matches IPv4-mapped IPv6 both ways). */
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
 * Compiles `list` (IPs or CIDRs, IPv4 or IPv6). Every entry that is not one goes to `problems` as
 * `<key>[<i>]: "<entry>" is not a valid IP address or CIDR`. Undefined for an empty list.
 */
export function compileAddressList(list: readonly unknown[], key: string, problems: string[]): AddressList | undefined {
  if (list.length === 0) return undefined;
  const blocks = new BlockList();
  const before = problems.length;
  for (let i = 0; i < list.length; i++) {
    const entry = list[i];
    const fail = (): void => {
      problems.push(`${key}[${i}]: ${JSON.stringify(entry)} is not a valid IP address or CIDR`);
    };
    if (typeof entry !== 'string') {
      fail();
      continue;
    }
    const slash = entry.indexOf('/');
    const address = stripZone(slash < 0 ? entry : entry.slice(0, slash));
    const family = isIP(address);
    if (family === 0) {
      fail();
      continue;
    }
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (slash < 0) {
      blocks.addAddress(address, type);
      continue;
    }
    const prefixText = entry.slice(slash + 1);
    const prefix = Number(prefixText);
    if (!isDecimal(prefixText) || prefix > (family === 4 ? 32 : 128)) {
      fail();
      continue;
    }
    blocks.addSubnet(address, prefix, type);
  }
  return problems.length === before ? new AddressList(blocks) : undefined;
}
