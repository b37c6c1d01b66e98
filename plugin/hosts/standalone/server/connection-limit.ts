// A cap on open connections, and a share of it per client address, so that clients who open sockets
// and never finish a request cannot use up the process's file descriptors (which the session files
// and the outbox need too). A trusted proxy's connections carry many clients: it has no share limit.
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { addressKey } from '../../../kits/node-http.ts';

export interface ConnectionLimits {
  maxConnections: number;
  maxConnectionsPerAddress: number;
}

/** Descriptors kept for files, pipes and the event loop beyond the connections. */
const RESERVED_DESCRIPTORS = 64;
const FALLBACK_MAX = 1024;

/** The soft limit on open files, where the system says (Linux); undefined elsewhere. */
function openFileLimit(): number | undefined {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** gateway.maxConnections by default: what fits the process's descriptor limit. */
export function defaultMaxConnections(): number {
  const files = openFileLimit();
  if (files === undefined) return FALLBACK_MAX;
  return Math.max(16, Math.min(16_384, Math.floor((files - RESERVED_DESCRIPTORS) * 0.75)));
}

/** gateway.maxConnectionsPerAddress by default: a quarter of the whole. */
export function defaultShare(maxConnections: number): number {
  return Math.min(maxConnections, Math.max(4, Math.floor(maxConnections / 4)));
}

/** Counts connections per address and closes those over either limit as they arrive. */
export class ConnectionLimit {
  readonly #open = new Map<string, number>();
  #total = 0;
  #refused = 0;

  constructor(
    server: Server,
    private readonly limits: () => ConnectionLimits,
    private readonly isTrustedProxy: (ip: string) => boolean,
    private readonly onRefused: (count: number) => void,
  ) {
    server.on('connection', (socket: Socket) => this.#admit(socket));
  }

  get open(): number {
    return this.#total;
  }

  #admit(socket: Socket): void {
    const { maxConnections, maxConnectionsPerAddress } = this.limits();
    const ip = socket.remoteAddress ?? 'unknown';
    const key = addressKey(ip);
    const mine = this.#open.get(key) ?? 0;
    if (this.#total >= maxConnections || (mine >= maxConnectionsPerAddress && !this.isTrustedProxy(ip))) {
      socket.destroy();
      // One line per burst of refusals, not one per socket.
      if (this.#refused++ === 0) setTimeout(() => this.#report(), 1000).unref();
      return;
    }
    this.#total++;
    this.#open.set(key, mine + 1);
    socket.once('close', () => {
      this.#total--;
      const left = (this.#open.get(key) ?? 1) - 1;
      if (left === 0) this.#open.delete(key);
      else this.#open.set(key, left);
    });
  }

  #report(): void {
    const count = this.#refused;
    this.#refused = 0;
    this.onRefused(count);
  }
}
