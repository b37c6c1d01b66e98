// Actions through the queue on Redis (hooks.queue): what a door adds, once every policy passed and
// the run ids are chosen, and how an assistant carries out what it takes. The assistant's durable
// dedupe is the action's id kept by the host with the action's effects (the events, the runs'
// acceptance) in one write, under the scope "queue": an action taken again after a restart is found
// there and only confirmed. docs/guide/door-anywhere.md says what is left.
import { randomUUID } from 'node:crypto';
import type { Action } from '../action.ts';
import type { Logger } from '../host.ts';
import type { RoutingPolicy } from '../runs/policies.ts';
import type { DedupeKeys } from '../dedupe/dedupe-keys.ts';
import type { CoalesceAs } from './run-batches.ts';
import type { ActionExecutor } from './execute.ts';

/** The dedupe scope of queued actions' ids: apart from every hook's, so none collides. */
export const QUEUE_SCOPE = 'queue';

/** What a door adds to the queue: the rendered action, its runs' ids already chosen. */
export interface QueuedAction {
  id: string;
  hook: string;
  requestId: string;
  action: Action;
  coalesce?: CoalesceAs;
}

/** The queue as a door uses it (queue/action-queue.ts). */
export interface QueueAdd {
  add(payload: string): Promise<void>;
}

/** The door's side: an action becomes an entry; resolves once Redis has it (throws its 503s). */
export class ActionDoor {
  constructor(private readonly queue: QueueAdd) {}

  async add(entry: Omit<QueuedAction, 'id'>): Promise<void> {
    const queued: QueuedAction = { id: randomUUID(), ...entry };
    await this.queue.add(JSON.stringify(queued));
  }
}

/** The assistant's side: one taken entry carried out at most once here. */
export class QueuedActionTaker {
  constructor(
    private readonly executor: Pick<ActionExecutor, 'actOnTaken'>,
    private readonly dedupe: DedupeKeys,
    private readonly policy: () => RoutingPolicy,
    private readonly logger: Logger,
  ) {}

  async act(payload: string): Promise<void> {
    let entry: QueuedAction;
    try {
      entry = JSON.parse(payload) as QueuedAction;
    } catch {
      // Not a door's: nothing to carry out (its content is not logged).
      this.logger.warn('a queue entry that is not an action was dropped', {});
      return;
    }
    // Carried out here already (before a restart, or while its confirmation was lost): confirmed only.
    if (this.dedupe.seen(QUEUE_SCOPE, entry.id)) return;
    const claim = this.dedupe.claim(QUEUE_SCOPE, entry.id);
    try {
      const outcome = await this.executor.actOnTaken(entry, this.policy());
      claim.settle(outcome.record!);
    } catch (err) {
      claim.release(err);
      throw err;
    }
  }
}
