// One call to a transform, from run() until its outcome: what it asks for, what it becomes, and the
// per-call facts the worker slot and the RSS guard keep (started, its clock, its RSS baseline).
import path from 'node:path';

export interface TransformCall {
  /** Absolute path, from confineModule. */
  file: string;
  /** Export to call; 'default' unless the mapping says otherwise. */
  exportName: string;
  /** What the transform function is given; item and index for a forEach item. */
  ctx: {
    payload: unknown;
    headers: Record<string, string>;
    query: Record<string, string>;
    path: string;
    /** Given to the transform as a URL object. */
    url?: string;
    item?: unknown;
    index?: number;
  };
  /** Most bytes the returned action may take as JSON: the mapping's body limit. Default 262144. */
  maxOutputBytes?: number;
}

export type TransformOutcome =
  | { ok: true; value: Record<string, unknown> | null }
  | {
      ok: false;
      /** Fixed wording, one line: nothing the transform wrote or threw. Safe to log and to answer with. */
      reason: string;
      /** What the transform said (its error message, one line). For operator tools only: never log it or answer with it. */
      detail?: string;
    };

const DEFAULT_MAX_OUTPUT_BYTES = 262_144;

export class PendingCall {
  /** The worker said "start": the transform function runs, on its own clock. */
  started = false;
  settled = false;
  /** The transform's time budget, from "start". */
  timer?: NodeJS.Timeout;
  /** Process RSS at the RSS guard's first tick after the call started. */
  rssAtStart?: number;
  /** The output limit in force: the call's own, else the default. */
  readonly maxOutputBytes: number;

  constructor(
    readonly id: number,
    readonly call: TransformCall,
    private readonly resolve: (outcome: TransformOutcome) => void,
  ) {
    const bytes = call.maxOutputBytes;
    this.maxOutputBytes =
      typeof bytes === 'number' && Number.isSafeInteger(bytes) && bytes > 0 ? bytes : DEFAULT_MAX_OUTPUT_BYTES;
  }

  /** The first outcome wins; later ones (a deadline racing an answer) are ignored. */
  settle(outcome: TransformOutcome): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    this.resolve(outcome);
  }

  /** What a log line may say about the call: the module's file name and export, never the payload. */
  logFields(reason: string): Record<string, unknown> {
    return { module: path.basename(this.call.file), export: this.call.exportName, reason };
  }
}
