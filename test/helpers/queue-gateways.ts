// Gateways on one queue (hooks.queue) for the door-anywhere process tests: doors and assistants
// spawned as real processes, and what their main sessions show.
import { HOOK_TOKEN, MAIN, spawnGateway, tempStateDir, writeConfig, type SpawnedGateway } from './spawn-gateway.ts';

export type QueueConfig = {
  redis: string;
  name: string;
  leaseSeconds?: number;
  maxWaiting?: number;
  timeoutMs?: number;
};

export interface QueueGatewayOptions {
  /** Restarts the gateway of this state dir on its config as written. */
  dir?: string;
  /** Merged into the config's hooks block beside the queue. */
  hooks?: Record<string, unknown>;
  /** Merged into the config at the top level (models, agents). */
  extra?: Record<string, unknown>;
}

/** Spawns gateways and remembers them, so a test file's `after` stops every one. */
export class QueueGateways {
  readonly running: SpawnedGateway[] = [];

  /** A gateway in `role` on the queue; `dir` again restarts the same one (its taker name, its sessions). */
  async start(
    role: 'ingress' | 'assistant',
    queue: QueueConfig,
    { dir, hooks = {}, extra = {} }: QueueGatewayOptions = {},
  ): Promise<SpawnedGateway> {
    const stateDir = dir ?? (await tempStateDir());
    if (!dir) await writeConfig(stateDir, { ...extra, hooks: { ...hooks, queue } });
    const gw = await spawnGateway(stateDir, ['--role', role]);
    this.running.push(gw);
    return gw;
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.running.map((gw) => gw.stop().catch(() => {})));
  }
}

export const wake = (gw: SpawnedGateway, text: string) =>
  gw.hook('/hooks/wake', { text, mode: 'next-heartbeat' }, HOOK_TOKEN);

/** The texts of the system events in an assistant's main session that start with `prefix`. */
export async function texts(gw: SpawnedGateway, prefix: string): Promise<string[]> {
  const { entries } = await gw.admin(`/api/sessions/${MAIN}/history?limit=1000`);
  return entries.filter((e: any) => e.kind === 'system-event' && e.text.startsWith(prefix)).map((e: any) => e.text);
}

/** Every acknowledged text in exactly one of the assistants' main sessions, none twice, none unasked. */
export async function onceEach(
  assistants: SpawnedGateway[],
  prefix: string,
  acknowledged: Set<string>,
): Promise<boolean> {
  const seen = (await Promise.all(assistants.map((gw) => texts(gw, prefix).catch(() => [])))).flat();
  return (
    seen.length === acknowledged.size && new Set(seen).size === seen.length && seen.every((t) => acknowledged.has(t))
  );
}
