// Rows of the back half (what happens after the 200), each in its own unit rather than as a ratio to
// bare node:http. The agent row: runs against a fake OpenAI-compatible model (a real local HTTP server)
// that answers every completion in 200 ms. The gateway runs maxConcurrentRuns at once, so with the
// queue kept full it should complete maxConcurrentRuns / 0.2 s runs a second.
import { startFakeProvider } from '../test/helpers/fake-provider.ts';
import { hostTimes, quietCpu } from './drive.ts';
import { HOOK_TOKEN, cpuMicros, startHookgate } from './processes.ts';

export interface BackHalfRow {
  name: string;
  unit: string;
  perSecond: number;
  /** What the issue asks for, in the same unit; the row meets it within `tolerance`. None: a figure to read beside another. */
  goal?: number;
  tolerance?: number;
  /** The gateway's CPU time (all threads) per item, the work left behind included. */
  cpuUsPerItem: number;
  items: number;
  stealPct: number;
}

const MODEL_MS = 200;
const CONCURRENT_RUNS = 32;
const QUEUED_PER_RUN = 4;
const AGENT_BODY = JSON.stringify({ message: 'bench run', deliver: false });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export const AGENT_RUNS_ROW = `agent runs against a model answering in ${MODEL_MS} ms`;

export async function agentRunsAgainstModel(seconds: number): Promise<BackHalfRow> {
  let answered = 0;
  let firstAnswerAt = 0;
  let lastAt = 0;
  const model = await startFakeProvider((_req, res) => {
    setTimeout(() => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: 'done' } }] }));
      answered++;
      lastAt = performance.now();
      firstAnswerAt ||= lastAt;
    }, MODEL_MS);
  });
  const gw = await startHookgate({ maxConcurrentRuns: CONCURRENT_RUNS }, undefined, {
    models: { providers: { fake: { baseUrl: model.baseUrl } } },
    agents: { defaults: { model: 'fake/bench' }, list: [{ id: 'main', default: true }] },
  });
  try {
    let accepted = 0;
    const submit = async (): Promise<void> => {
      const res = await fetch(`${gw.url}/hooks/agent`, {
        method: 'POST',
        headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json' },
        body: AGENT_BODY,
      });
      await res.arrayBuffer();
      if (res.status !== 202) throw new Error(`the agent row's request was answered ${res.status}`);
      accepted++;
    };
    const cpuBefore = await cpuMicros(gw.pid);
    const stealBefore = await hostTimes();
    // Senders keep the queue at QUEUED_PER_RUN waiting runs per running one: never empty (an
    // acceptance waits for its durable write), never near maxQueuedRuns.
    const end = performance.now() + seconds * 1000;
    const sender = async (): Promise<void> => {
      while (performance.now() < end) {
        if (accepted - model.requests.length < QUEUED_PER_RUN * CONCURRENT_RUNS) await submit();
        else await sleep(5);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENT_RUNS }, sender));
    const deadline = performance.now() + 60_000;
    while (answered < accepted && performance.now() < deadline) await sleep(20);
    const stealAfter = await hostTimes();
    const cpu = (await quietCpu(gw.pid)) - cpuBefore;
    return {
      name: `${AGENT_RUNS_ROW} (maxConcurrentRuns ${CONCURRENT_RUNS})`,
      unit: 'runs/s',
      // The runs answered after the first, over the time from the first answer to the last.
      perSecond: Math.round(((answered - 1) / Math.max(0.001, (lastAt - firstAnswerAt) / 1000)) * 10) / 10,
      goal: CONCURRENT_RUNS / (MODEL_MS / 1000),
      tolerance: 0.1,
      cpuUsPerItem: Math.round(cpu / Math.max(1, answered)),
      items: answered,
      stealPct: Math.round(
        ((stealAfter.steal - stealBefore.steal) / Math.max(1, stealAfter.total - stealBefore.total)) * 100,
      ),
    };
  } finally {
    await gw.stop();
    await model.close();
  }
}
