// Gateways on the queue on Redis (hooks.queue) as real processes, for the door-anywhere tests: a
// door (--role ingress) or an assistant, each with its own state dir, stopped together at the end.
import { spawnGateway, tempStateDir, writeConfig, type SpawnedGateway } from './spawn-gateway.ts';

export type QueueConfig = {
  redis: string;
  name: string;
  leaseSeconds?: number;
  maxWaiting?: number;
  timeoutMs?: number;
};

export interface QueueGatewayOptions {
  /** Restarts the gateway of this state dir (its taker name, its sessions) on its config as written. */
  dir?: string;
  /** Merged into the config's hooks block beside the queue. */
  hooks?: Record<string, unknown>;
  /** Merged into the config at the top level (models, agents). */
  extra?: Record<string, unknown>;
}

/** The gateways started, to stop them all at the end whatever a test left. */
export class QueueGateways {
  readonly running: SpawnedGateway[] = [];

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
