// Heartbeats of the standalone gateway: periodic and on request, coalesced per agent. A heartbeat
// drains the main session's pending system events into one agent turn (recorded as prompt and reply).
import type { Logger } from '../../../host.ts';
import type { SessionStore } from '../storage/index.ts';
import type { AgentRunner } from './agent-runner.ts';

/** Requests closer together than this give one heartbeat. */
const COALESCE_MS = 100;
/** A heartbeat prompt stays this small whatever piled up: each event clipped, the rest left out. */
const PROMPT_BUDGET = 64 * 1024;
const EVENT_MAX = 2000;

export function heartbeatPrompt(events: readonly string[]): string {
  const lines: string[] = [];
  let size = 0;
  for (const e of events) {
    const line = `- ${e.length > EVENT_MAX ? `${e.slice(0, EVENT_MAX)}… (clipped)` : e}`;
    if (size + line.length > PROMPT_BUDGET) break;
    lines.push(line);
    size += line.length + 1;
  }
  const left = events.length - lines.length;
  const tail = left > 0 ? `\n(${left} more event(s) left out of this prompt; all are in the session history)` : '';
  return `System events since the last heartbeat:\n${lines.join('\n')}${tail}`;
}

export interface HeartbeatDeps {
  store: SessionStore;
  runner: AgentRunner;
  logger: Logger;
  mainSessionKey(agentId: string): string;
  agentIds(): readonly string[];
  turnTimeoutMs(): number;
}

interface AgentBeat {
  timer?: NodeJS.Timeout;
  running?: Promise<void>;
  again: boolean;
  reasons: Set<string>;
}

export class Heartbeats {
  private readonly beats = new Map<string, AgentBeat>();
  private periodic?: NodeJS.Timeout;
  private readonly stopping = new AbortController();

  constructor(private readonly deps: HeartbeatDeps) {}

  startPeriodic(everySeconds: number): void {
    clearInterval(this.periodic);
    this.periodic = setInterval(() => {
      for (const id of this.deps.agentIds()) this.request(id, 'periodic');
    }, everySeconds * 1000);
    this.periodic.unref();
  }

  request(agentId: string, reason: string): void {
    if (this.stopping.signal.aborted) return;
    let beat = this.beats.get(agentId);
    if (!beat) this.beats.set(agentId, (beat = { again: false, reasons: new Set() }));
    beat.reasons.add(reason);
    if (beat.running) beat.again = true;
    else if (!beat.timer) beat.timer = setTimeout(() => this.run(agentId, beat), COALESCE_MS);
  }

  /** Stops timers and interrupts a heartbeat turn in progress. */
  async stop(): Promise<void> {
    clearInterval(this.periodic);
    this.stopping.abort();
    for (const beat of this.beats.values()) clearTimeout(beat.timer);
    await Promise.allSettled([...this.beats.values()].map((b) => b.running));
  }

  private run(agentId: string, beat: AgentBeat): void {
    beat.timer = undefined;
    const reasons = [...beat.reasons].join(', ');
    beat.reasons.clear();
    beat.running = this.beat(agentId, reasons)
      .catch((err) => this.deps.logger.error('heartbeat failed', { agentId, reason: String(err) }))
      .finally(() => {
        beat.running = undefined;
        if (beat.again && !this.stopping.signal.aborted) {
          beat.again = false;
          beat.timer = setTimeout(() => this.run(agentId, beat), COALESCE_MS);
        }
      });
  }

  private async beat(agentId: string, reasons: string): Promise<void> {
    const { store, runner } = this.deps;
    const key = this.deps.mainSessionKey(agentId);
    const events = store.takePending(key);
    await store.append(key, { kind: 'heartbeat', text: `heartbeat (${reasons}): ${events.length} pending event(s)` });
    if (events.length === 0) return;
    const prompt = heartbeatPrompt(events);
    await store.append(key, { kind: 'prompt', text: prompt });
    // The runner bounds the call by the time limit itself; the stop's signal ends it at once.
    const outcome = await runner.run({ prompt, timeoutMs: this.deps.turnTimeoutMs(), signal: this.stopping.signal });
    if (outcome.status === 'ok') await store.append(key, { kind: 'reply', text: outcome.reply });
    else await store.append(key, { kind: 'reply', text: '', error: `${outcome.status}: ${outcome.error}` });
  }
}
