// What the plugin acknowledged and OpenClaw has not yet taken in, kept in the plugin's state dir.
// OpenClaw holds system events in memory and starts a run only when asked, so a 200 or 202 answered
// just before OpenClaw stops would otherwise be lost with it. Every acknowledged event and run is a
// line here before its answer; a later line says OpenClaw took it in (the event left OpenClaw's queue,
// the run was accepted by OpenClaw) or the run finished. At start, what is left is handed back once.
// Lines that come while a write is under way go out together in the next one: one append per line,
// one after another, held every wake inside OpenClaw behind the ones before it (docs/performance.md).
import { appendFile, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { AcceptedRun, IdempotencyRecord } from '../../host.ts';
import { stateFileError } from '../../util/state-file-error.ts';

/** A system event for an OpenClaw session: a wake's text or a run's summary. */
export interface JournaledEvent {
  id: string;
  at: number;
  sessionKey: string;
  text: string;
  /** The run whose summary this is. */
  runId?: string;
  /** The idempotency record the event carries (a request's key, a digest's mark): one write for both. */
  idem?: IdempotencyRecord;
}

type Line =
  | ({ k: 'event' } & JournaledEvent)
  | { k: 'run'; id: string; at: number; run: AcceptedRun }
  | { k: 'taken'; id: string }
  | { k: 'done'; id: string };

/** What the last process acknowledged and OpenClaw never had, in the order it was acknowledged. */
export interface Pending {
  events: JournaledEvent[];
  /** Accepted runs OpenClaw never started: run them now. */
  runs: AcceptedRun[];
  /** Runs OpenClaw started but whose end nobody saw: their summaries say they were interrupted. */
  interrupted: AcceptedRun[];
  /** The idempotency records of every event in the file, taken in or not, oldest first. */
  keys: IdempotencyRecord[];
}

/** The journal is rewritten to what is pending once it holds this many lines more than that. */
const COMPACT_SLACK = 500;

export class AckJournal {
  #file: string | undefined;
  #lines = 0;
  /** Ids still pending, for compaction: event ids and run ids. */
  readonly #open = new Map<string, Line[]>();
  /** Appends and rewrites, one after another in order. */
  #tail: Promise<void> = Promise.resolve();
  /** Lines waiting for the next append, with what to tell each one's caller. */
  #batch: { line: Line; resolve: () => void; reject: (err: unknown) => void }[] = [];

  /** Reads what the last process left, keeps only that, and returns it. */
  async open(stateDir: string): Promise<Pending> {
    const dir = path.join(stateDir, 'hookgate');
    await mkdir(dir, { recursive: true, mode: 0o700 });
    this.#file = path.join(dir, 'acknowledged.jsonl');
    let text = '';
    try {
      text = await readFile(this.#file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw stateFileError(this.#file, err);
    }
    const pending = pendingOf(parseLines(text));
    // Handed back now: the next process sees only what this one fails to hand over.
    this.#open.clear();
    for (const e of pending.events) this.#open.set(e.id, [{ k: 'event', ...e }]);
    const now = Date.now();
    for (const r of pending.runs) this.#open.set(r.runId, [{ k: 'run', id: r.runId, at: now, run: r }]);
    for (const r of pending.interrupted)
      this.#open.set(r.runId, [
        { k: 'run', id: r.runId, at: now, run: r },
        { k: 'taken', id: r.runId },
      ]);
    await this.#serial(() => this.#rewrite());
    return pending;
  }

  /** Resolves once the event is on disk. */
  event(e: JournaledEvent): Promise<void> {
    return this.#append({ k: 'event', ...e });
  }

  /** Resolves once the accepted run is on disk. */
  run(run: AcceptedRun): Promise<void> {
    return this.#append({ k: 'run', id: run.runId, at: Date.now(), run });
  }

  /** OpenClaw has it: the event left its queue, or it accepted the run. */
  taken(id: string): Promise<void> {
    return this.#append({ k: 'taken', id });
  }

  /** The run ended (its summary is an event of its own). */
  done(runId: string): Promise<void> {
    return this.#append({ k: 'done', id: runId });
  }

  /** Resolves once the line is on disk, written with the others that came before its batch's turn. */
  #append(line: Line): Promise<void> {
    const written = new Promise<void>((resolve, reject) => this.#batch.push({ line, resolve, reject }));
    // The first line of a batch books its turn; the ones after it join until that turn comes.
    if (this.#batch.length === 1) void this.#serial(() => this.#writeBatch()).catch(() => {});
    return written;
  }

  async #writeBatch(): Promise<void> {
    const batch = this.#batch;
    this.#batch = [];
    try {
      const file = this.#file;
      if (!file) throw new Error('the acknowledgement journal is not open');
      await appendFile(file, batch.map((b) => `${JSON.stringify(b.line)}\n`).join(''), { mode: 0o600 });
      this.#lines += batch.length;
      for (const b of batch) this.#track(b.line);
      if (this.#lines > this.#open.size * 2 + COMPACT_SLACK) await this.#rewrite();
    } catch (err) {
      for (const b of batch) b.reject(err);
      return;
    }
    for (const b of batch) b.resolve();
  }

  #serial(step: () => Promise<void>): Promise<void> {
    const next = this.#tail.then(step);
    this.#tail = next.catch(() => undefined);
    return next;
  }

  #track(line: Line): void {
    if (line.k === 'event' || line.k === 'run') {
      this.#open.set(line.id, [line]);
      return;
    }
    const lines = this.#open.get(line.id);
    if (!lines) return;
    const first = lines[0]!;
    // A taken event and a finished run are settled; a taken run waits for its end.
    if (first.k === 'event' || line.k === 'done') this.#open.delete(line.id);
    else lines.push(line);
  }

  async #rewrite(): Promise<void> {
    const file = this.#file!;
    const temp = `${file}.tmp`;
    const lines = [...this.#open.values()].flat();
    await writeFile(temp, lines.map((l) => `${JSON.stringify(l)}\n`).join(''), { mode: 0o600 });
    await rename(temp, file);
    this.#lines = lines.length;
  }
}

/** Replays the lines: what was acknowledged and never taken in, and the runs nobody saw end. */
export function pendingOf(lines: readonly Line[]): Pending {
  const events = new Map<string, JournaledEvent>();
  const runs = new Map<string, { run: AcceptedRun; taken: boolean }>();
  const ended = new Set<string>();
  for (const line of lines) {
    switch (line.k) {
      case 'event': {
        const { k: _k, ...e } = line;
        events.set(e.id, e);
        // A run whose summary was acknowledged has ended, whatever else was recorded.
        if (e.runId) ended.add(e.runId);
        break;
      }
      case 'run':
        runs.set(line.id, { run: line.run, taken: false });
        break;
      case 'taken': {
        events.delete(line.id);
        const r = runs.get(line.id);
        if (r) r.taken = true;
        break;
      }
      case 'done':
        ended.add(line.id);
        break;
    }
  }
  const keys = lines.flatMap((l) => (l.k === 'event' && l.idem ? [l.idem] : []));
  const pending: Pending = { events: [...events.values()], runs: [], interrupted: [], keys };
  for (const [id, r] of runs) {
    if (ended.has(id)) continue;
    (r.taken ? pending.interrupted : pending.runs).push(r.run);
  }
  return pending;
}

function isLine(v: unknown): v is Line {
  if (v === null || typeof v !== 'object') return false;
  const l = v as Record<string, unknown>;
  if (typeof l.id !== 'string') return false;
  switch (l.k) {
    case 'event':
      return typeof l.sessionKey === 'string' && typeof l.text === 'string' && typeof l.at === 'number';
    case 'run':
      return l.run !== null && typeof l.run === 'object' && (l.run as AcceptedRun).runId === l.id;
    case 'taken':
    case 'done':
      return true;
    default:
      return false;
  }
}

export function parseLines(text: string): Line[] {
  const out: Line[] = [];
  for (const raw of text.split('\n')) {
    if (!raw) continue;
    try {
      const v: unknown = JSON.parse(raw);
      if (isLine(v)) out.push(v);
    } catch {
      // A line torn by a crash is dropped: it was never acknowledged.
    }
  }
  return out;
}
