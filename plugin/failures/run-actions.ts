// The resolved actions of the latest runs that ended well, so `POST /api/runs/<runId>/replay` can run
// one again (a failed run's action is in the failure book). Only the run as it was accepted (agent,
// session key, model, thinking, the message as rendered and wrapped, delivery route); never the
// request's payload. Kept in <stateDir>/run-actions.jsonl, the newest 10,000 within 16 MiB of text.
import type { AcceptedRun, GatewayHost } from '../host.ts';
import { StateFile } from '../util/state-file.ts';
import type { RunAction } from './failures.ts';

interface KeptRun {
  action: RunAction;
  /** The run of the last replay of this one. */
  replayedBy?: string;
}

export const MAX_KEPT_RUNS = 10_000;
export const MAX_KEPT_TEXT = 16 * 1024 * 1024;
/** At open, a file holding more is trimmed oldest first; a line weighs more than its text. */
const KEEP_AT_OPEN = { records: MAX_KEPT_RUNS, bytes: 4 * MAX_KEPT_TEXT };

function isKeptRun(value: unknown): value is KeptRun {
  const r = value as Partial<KeptRun> | null;
  return (
    typeof r === 'object' &&
    r !== null &&
    typeof r.action === 'object' &&
    r.action !== null &&
    typeof r.action.prompt === 'string' &&
    typeof r.action.sessionKey === 'string' &&
    typeof r.action.agentId === 'string'
  );
}

export class RunActions {
  #text = 0;

  private constructor(
    private readonly file: StateFile<KeptRun>,
    private readonly logger: GatewayHost['logger'],
  ) {
    for (const r of file.records.values()) this.#text += r.action.prompt.length;
  }

  static async open(
    path: string | undefined,
    logger: GatewayHost['logger'],
    sync?: GatewayHost['fileSync'],
  ): Promise<RunActions> {
    return new RunActions(await StateFile.open(path, isKeptRun, logger, { keepAtMost: KEEP_AT_OPEN, sync }), logger);
  }

  /** Keeps a run that ended well; the oldest kept go when over the bounds. */
  keep(run: Readonly<AcceptedRun>): void {
    const { runId, ...action } = run;
    this.#text += action.prompt.length;
    this.#write(this.file.put(runId, { action }));
    while (this.file.size > MAX_KEPT_RUNS || (this.#text > MAX_KEPT_TEXT && this.file.size > 1)) {
      const [oldest, kept] = this.file.records.entries().next().value!;
      this.#text -= kept.action.prompt.length;
      this.#write(this.file.remove(oldest));
    }
  }

  get(runId: string): { action: RunAction; replayedBy?: string } | undefined {
    return this.file.get(runId);
  }

  replayed(runId: string, by: string): Promise<void> {
    const kept = this.file.get(runId);
    return kept ? this.file.put(runId, { ...kept, replayedBy: by }) : Promise.resolve();
  }

  close(): Promise<void> {
    return this.file.close();
  }

  /** Nobody waits for these writes: the state file has logged a failure already. */
  #write(done: Promise<void>): void {
    done.catch(() => this.logger.warn('a run kept for replay may be missing after a restart'));
  }
}
