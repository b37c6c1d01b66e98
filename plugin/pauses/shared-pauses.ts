// Pauses shared by every instance (hooks.sharedState): a Redis hash of each hook's last change
// ({ paused, at }) and a channel telling the others at once. A change taken while Redis is down
// stays local; when Redis answers again the later change of each hook wins, here and there.
import type { Logger } from '../host.ts';
import type { SharedRedis } from '../redis/shared-redis.ts';
import { errorMessage } from '../util/errors.ts';
import type { Pauses } from './pauses.ts';

interface Change {
  hook: string;
  paused: boolean;
  at: number;
}

function parseChange(text: string): Change | undefined {
  try {
    const v = JSON.parse(text) as Partial<Change>;
    if (typeof v.hook === 'string' && typeof v.paused === 'boolean' && typeof v.at === 'number') return v as Change;
  } catch {
    // Not ours: ignored.
  }
  return undefined;
}

export class SharedPauses {
  readonly #hash: string;
  readonly #channel: string;

  /** Call before the connection is made: it subscribes and loads the hash on every (re)connection. */
  constructor(
    private readonly shared: SharedRedis,
    private readonly pauses: Pauses,
    private readonly logger: Logger,
  ) {
    this.#hash = shared.key('pauses');
    this.#channel = shared.key('pauses:changed');
    shared.subscribe(this.#channel, (message) => {
      const change = parseChange(message);
      if (change) void this.#apply(change);
    });
    shared.onReady(() => this.#reconcile());
  }

  /** Takes the change here, then tells the others; false when Redis could not be told (local only). */
  async set(hook: string, paused: boolean): Promise<boolean> {
    const change: Change = { hook, paused, at: Date.now() };
    await this.pauses.set(hook, paused, change.at);
    if (!this.shared.up) return false;
    try {
      const text = JSON.stringify(change);
      await this.shared.commands.multi().hset(this.#hash, hook, text).publish(this.#channel, text).exec();
      return true;
    } catch (err) {
      this.logger.warn('a pause could not be shared; it applies to this instance', { hook, reason: errorMessage(err) });
      return false;
    }
  }

  async #apply(change: Change): Promise<void> {
    if (change.at < this.pauses.changedAt(change.hook)) return;
    await this.pauses.set(change.hook, change.paused, change.at).catch((err: unknown) => {
      this.logger.error('a shared pause could not be recorded here', { hook: change.hook, reason: errorMessage(err) });
    });
  }

  /** On (re)connection: what others changed meanwhile applies here, what changed here goes to them. */
  async #reconcile(): Promise<void> {
    const remote = new Map<string, Change>();
    for (const text of Object.values(await this.shared.commands.hgetall(this.#hash))) {
      const change = parseChange(text);
      if (change) remote.set(change.hook, change);
    }
    for (const hook of new Set([...remote.keys(), ...this.pauses.hooks()])) {
      const theirs = remote.get(hook);
      const at = this.pauses.changedAt(hook);
      if (theirs && theirs.at >= at) await this.#apply(theirs);
      else if (at > 0) {
        const text = JSON.stringify({ hook, paused: this.pauses.isPaused(hook), at });
        await this.shared.commands.multi().hset(this.#hash, hook, text).publish(this.#channel, text).exec();
      }
    }
  }
}
