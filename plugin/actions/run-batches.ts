// Bursts in one run (a mapping's `coalesce: { seconds, maxItems, key? }`): agent requests with the
// same key (default: the hook) within `seconds` of the first, up to `maxItems`, become one run whose
// message lists their rendered messages in arrival order, each wrapped on its own. Each request is
// answered at once with that run's id; the run starts when the window closes or the batch is full.
// Batches live in <stateDir>/batches.jsonl (a header per batch, a record per message), so waiting
// batches outlive a restart; once the run is accepted the batch is removed, and a batch whose run an
// earlier process had already handed to the host (it comes back in the host's restore, or its mark,
// util/once-marks.ts, kept with the run's acceptance does) is only removed, so each batch runs once.
// A batch counts as one run in budgets.
import { randomUUID } from 'node:crypto';
import { HookError } from '../errors.ts';
import type { GatewayHost, IdempotencyRecord } from '../host.ts';
import type { AgentSpec } from '../action.ts';
import type { RunService } from '../runs/run-service.ts';
import type { RoutingPolicy } from '../runs/policies.ts';
import type { BudgetBook } from '../budgets/budget-book.ts';
import { wrapExternalContent } from '../safety/index.ts';
import { StateFile } from '../util/state-file.ts';
import { errorMessage } from '../util/errors.ts';
import { timerDelay } from '../util/time-bounds.ts';
import { BATCH_SCOPE, onceMark } from '../util/once-marks.ts';
import { crashPoint } from '../util/test-crash-point.ts';
import { prepareAgentJob } from './agent.ts';
import type { HookMetrics } from '../observe/metrics.ts';

/** A mapping's coalesce, with its key rendered for the request. */
export interface CoalesceAs {
  key: string;
  seconds: number;
  maxItems: number;
}

interface BatchHeader {
  kind: 'batch';
  hook: string;
  key: string;
  runId: string;
  /** ms since the epoch: when the window closes. */
  closesAt: number;
  maxItems: number;
  /** The first request's spec (its routing, model, name), without its message. */
  spec: Omit<AgentSpec, 'message'>;
}

interface BatchItem {
  kind: 'item';
  runId: string;
  seq: number;
  requestId: string;
  message: string;
}

type BatchRecord = BatchHeader | BatchItem;

function isBatchRecord(value: unknown): value is BatchRecord {
  const v = value as Partial<BatchHeader> & Partial<BatchItem>;
  if (typeof v !== 'object' || v === null || typeof v.runId !== 'string') return false;
  if (v.kind === 'batch')
    return (
      typeof v.hook === 'string' && typeof v.closesAt === 'number' && typeof v.spec === 'object' && v.spec !== null
    );
  return v.kind === 'item' && typeof v.seq === 'number' && typeof v.message === 'string';
}

interface OpenBatch {
  header: BatchHeader;
  items: BatchItem[];
  timer?: NodeJS.Timeout;
}

/** A batch whose run the host could not take yet (503 overloaded, a failed record) is tried again this late. */
const RETRY_MS = 2000;

/** Where a started batch goes when its hook's budget is spent: a digest or a hold. */
export interface BatchOverflow {
  /** `mark` is kept with the held action: a start knows the batch was held. */
  hold(hook: string, requestId: string, spec: AgentSpec, mark: IdempotencyRecord): Promise<void>;
}

export class RunBatches {
  /** Batches still taking requests, by hook and key. */
  readonly #open = new Map<string, OpenBatch>();
  /** Every batch not yet run, by run id. */
  readonly #waiting = new Map<string, OpenBatch>();
  readonly #starting = new Set<Promise<void>>();
  #closed = false;

  private constructor(
    private readonly file: StateFile<BatchRecord>,
    private readonly host: GatewayHost,
    private readonly runs: RunService,
    private readonly snapshot: () => RoutingPolicy,
    private readonly budgets: Pick<BudgetBook, 'take' | 'digest'>,
    private readonly overflow: () => BatchOverflow | undefined,
    private readonly metrics: Pick<HookMetrics, 'coalesced'>,
  ) {}

  /** Opens <host.stateDir>/batches.jsonl (memory only without a state dir). */
  static async open(
    host: GatewayHost,
    runs: RunService,
    snapshot: () => RoutingPolicy,
    budgets: Pick<BudgetBook, 'take' | 'digest'>,
    overflow: () => BatchOverflow | undefined,
    metrics: Pick<HookMetrics, 'coalesced'>,
  ): Promise<RunBatches> {
    const path = host.stateDir === undefined ? undefined : `${host.stateDir}/batches.jsonl`;
    const file = await StateFile.open(path, isBatchRecord, host.logger, { sync: host.fileSync });
    return new RunBatches(file, host, runs, snapshot, budgets, overflow, metrics);
  }

  /** Requests waiting in batches, in all. */
  get waiting(): number {
    let n = 0;
    for (const batch of this.#waiting.values()) n += batch.items.length;
    return n;
  }

  /**
   * The batches an earlier process left: those whose run it had already handed over (`handedOver`,
   * the host's restored runs) are removed, the others close at their time (now, if it passed).
   */
  start(handedOver: ReadonlySet<string>): void {
    const byRun = new Map<string, OpenBatch>();
    const items: BatchItem[] = [];
    for (const record of this.file.records.values()) {
      if (record.kind === 'batch') byRun.set(record.runId, { header: record, items: [] });
      else items.push(record);
    }
    for (const item of items.sort((a, b) => a.seq - b.seq)) byRun.get(item.runId)?.items.push(item);
    for (const [runId, batch] of byRun) {
      if (handedOver.has(runId) || batch.items.length === 0) {
        void this.#forget(batch);
        continue;
      }
      this.#waiting.set(runId, batch);
      this.#closeAt(batch, batch.header.closesAt);
    }
  }

  /**
   * Adds the request's run to its batch (a new one when none is open for its key); resolves with the
   * batch's run id once the request is on disk. The spec is checked against the policies first.
   */
  async add(hook: string, as: CoalesceAs, spec: AgentSpec, requestId: string, snap: RoutingPolicy): Promise<string> {
    prepareAgentJob(spec, snap, this.host);
    const openKey = `${hook}\u0000${as.key}`;
    let batch = this.#open.get(openKey);
    const writes: Promise<void>[] = [];
    if (!batch) {
      const { message: _message, ...rest } = spec;
      const header: BatchHeader = {
        kind: 'batch',
        hook,
        key: as.key,
        runId: randomUUID(),
        closesAt: Date.now() + as.seconds * 1000,
        maxItems: as.maxItems,
        spec: rest,
      };
      batch = { header, items: [] };
      this.#open.set(openKey, batch);
      this.#waiting.set(header.runId, batch);
      writes.push(this.file.put(header.runId, header));
      this.#closeAt(batch, header.closesAt);
    }
    const { runId } = batch.header;
    const item: BatchItem = { kind: 'item', runId, seq: batch.items.length, requestId, message: spec.message };
    batch.items.push(item);
    writes.push(this.file.put(`${runId}#${item.seq}`, item));
    // Full: no request joins it any more, and it starts now.
    if (batch.items.length >= batch.header.maxItems) this.#closeAt(batch, 0);
    await Promise.all(writes);
    this.metrics.coalesced(hook);
    return runId;
  }

  /** Stops the timers (batches not yet run stay on disk for the next start), then closes the file. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const batch of this.#waiting.values()) clearTimeout(batch.timer);
    await Promise.allSettled([...this.#starting]);
    await this.file.close();
  }

  #closeAt(batch: OpenBatch, at: number): void {
    if (this.#closed) return;
    clearTimeout(batch.timer);
    const fire = (): void => {
      const { hook, key } = batch.header;
      const openKey = `${hook}\u0000${key}`;
      if (this.#open.get(openKey) === batch) this.#open.delete(openKey);
      const started = this.#start(batch).finally(() => this.#starting.delete(started));
      this.#starting.add(started);
    };
    if (at <= Date.now()) {
      // Closed now: later requests open a new batch at once.
      const openKey = `${batch.header.hook}\u0000${batch.header.key}`;
      if (this.#open.get(openKey) === batch) this.#open.delete(openKey);
      batch.timer = setTimeout(fire, 0);
    } else batch.timer = setTimeout(fire, timerDelay(at - Date.now()));
    batch.timer.unref();
  }

  /** The batch's one run, past its hook's budget a digest or a hold; tried again while the host cannot take it. */
  async #start(batch: OpenBatch): Promise<void> {
    const { header, items } = batch;
    const spec: AgentSpec = { ...header.spec, message: batchMessage(header, items), alreadyWrapped: true };
    try {
      const job = prepareAgentJob(spec, this.snapshot(), this.host);
      job.runId = header.runId;
      job.hookId = header.hook;
      job.requestId = items[0]!.requestId;
      const verdict = await this.budgets.take(header.hook, 1);
      if (!verdict.ok) {
        const hold = verdict.over.budget.overflow !== 'digest' ? this.overflow() : undefined;
        const mark = onceMark(BATCH_SCOPE, header.runId);
        if (hold) await hold.hold(header.hook, job.requestId, spec, mark);
        else
          await this.budgets.digest(
            verdict,
            header.hook,
            job.agentId,
            items.map((i) => i.message),
            header.runId,
          );
        crashPoint('batch-over-budget');
      } else {
        try {
          // The batch's mark is kept with the run's acceptance: a crash before the batch is removed
          // below leaves the next start knowing it ran.
          await this.runs.submit([job], onceMark(BATCH_SCOPE, header.runId));
        } catch (err) {
          verdict.undo();
          throw err;
        }
        crashPoint('batch-accepted');
      }
    } catch (err) {
      if (err instanceof HookError && err.code !== 'overloaded' && err.code !== 'internal_error') {
        // Refused by the policies now in force (a reload): dropped, as a held action would be.
        this.host.logger.warn('a coalesced batch was refused by the policies now in force', {
          hook: header.hook,
          runId: header.runId,
          code: err.code,
        });
      } else {
        this.host.logger.warn('a coalesced batch could not start; trying again later', {
          hook: header.hook,
          runId: header.runId,
          reason: errorMessage(err),
        });
        if (!this.#closed) this.#closeAt(batch, Date.now() + RETRY_MS);
        return;
      }
    }
    await this.#forget(batch);
  }

  async #forget(batch: OpenBatch): Promise<void> {
    const { runId } = batch.header;
    this.#waiting.delete(runId);
    const ids = [runId, ...batch.items.map((i) => `${runId}#${i.seq}`)];
    await Promise.all(ids.map((id) => this.file.remove(id))).catch((err: unknown) =>
      this.host.logger.error('a coalesced batch could not be removed from its file', {
        runId,
        reason: errorMessage(err),
      }),
    );
  }
}

/** The run's message: a line saying what it gathers, then each request's message wrapped on its own. */
function batchMessage(header: BatchHeader, items: readonly BatchItem[]): string {
  const hookName = header.spec.name?.trim() || header.hook;
  const parts = [`${items.length} requests to hook ${header.hook}, in arrival order:`];
  items.forEach((item, i) => {
    const text = header.spec.allowUnsafeExternalContent
      ? item.message.trim()
      : wrapExternalContent(item.message.trim(), { source: header.spec.source, hookName });
    parts.push(`${i + 1}.\n${text}`);
  });
  return parts.join('\n\n');
}
