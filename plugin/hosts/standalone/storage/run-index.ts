// Which session file holds a run: one short line per accepted run in <stateDir>/data/run-index.jsonl
// (a segmented log with its own retention), so /api/runs/<id> can answer for runs long gone from
// memory. A lookup reads the index backwards, parsing only the line that starts with the run's id.
import type { Logger } from '../../../host.ts';
import { JsonlLog, type LogResources } from './log/jsonl-log.ts';

interface IndexLine {
  runId: string;
  session: string;
}

export interface RunIndexLimits {
  resources?: LogResources;
  segmentBytes?: number;
  retainBytes?: number;
}

export class RunIndex {
  readonly #log: JsonlLog<IndexLine>;

  constructor(file: string, logger: Logger, limits: RunIndexLimits = {}) {
    this.#log = new JsonlLog<IndexLine>(file, logger, limits);
  }

  /** Settles once the line is written. The run id is the first field: lookups match the line's start. */
  add(runId: string, sessionKey: string): Promise<void> {
    return this.#log.append({ runId, session: sessionKey });
  }

  /** The session key of the newest run with this id still in the index. */
  async sessionOf(runId: string): Promise<string | undefined> {
    const needle = Buffer.from(`{"runId":${JSON.stringify(runId)},`);
    let found: string | undefined;
    await this.#log.scanBackward((line) => {
      if (line.runId !== runId || typeof line.session !== 'string') return true;
      found = line.session;
      return false;
    }, needle);
    return found;
  }

  close(): Promise<void> {
    return this.#log.close();
  }
}
