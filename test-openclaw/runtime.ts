// hookgate's promises inside a running OpenClaw, with a model OpenClaw can reach (a fake OpenAI-compatible
// provider on loopback): agent tools called through the gateway, thinking and timeouts reaching
// OpenClaw's run, config reloads without a retired call, a stop during a run, plugin reloads coming
// back, and what was acknowledged surviving a kill -9 of OpenClaw, handed back exactly once.
// Registered by run.ts (one process, one watchdog); its gateway is its own.
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  gatewayConfig,
  launchGateway,
  writeConfigAtomic,
  type GatewayFiles,
  type HooksBlock,
  type RunningGateway,
  withFakeModel,
  startModelGateway,
  stopModelGateway,
} from './openclaw-env.ts';
import { parseLines, pendingOf, type Pending } from '../plugin/hosts/openclaw/ack-journal.ts';
import { streamReply, type FakeProvider } from '../test/helpers/fake-provider.ts';

const nonce = Math.random().toString(36).slice(2, 8);
/** A prompt with this word gets no answer from the fake model until OpenClaw gives up the request. */
const HOLD = 'HOLD-THE-LINE';
/** OpenClaw reports a plugin load it could not drain this long after it started retiring it. */
const OPENCLAW_RETIREMENT_MS = 5_000;

const HOOKS: HooksBlock = {
  enabled: true,
  token: `hook-rt-${nonce}-0123456789`,
  path: '/hooks',
  defaultSessionKey: 'hook:ingress',
  allowedSessionKeyPrefixes: ['hook:'],
  // One run at a time: a held run keeps the next one waiting in hookgate, acknowledged and not yet OpenClaw's.
  maxConcurrentRuns: 1,
};

let files: GatewayFiles;
let gw: RunningGateway;
let model: FakeProvider;
/** Model requests the fake holds open: closed = OpenClaw gave the request up. */
const held: { text: string; closed: boolean; res: ServerResponse }[] = [];
/** Off: held prompts are answered too (a held run occupies OpenClaw's agent lane, heartbeats wait for it). */
let holding = true;

/** OpenClaw's model requests: the text of their messages. */
const asked = (): string[] => model.requests.map((r) => JSON.stringify(r.body.messages ?? ''));

function answer(res: ServerResponse): void {
  streamReply(res, 'HEARTBEAT_OK');
}

function answerAsModel(req: { body: any }, res: ServerResponse): void {
  const text = JSON.stringify(req.body.messages ?? '');
  if (holding && text.includes(HOLD)) {
    const entry = { text, closed: false, res };
    held.push(entry);
    res.on('close', () => (entry.closed = true));
    return;
  }
  answer(res);
}

/** Answers every held request OpenClaw still waits for; with `stop`, later ones are not held. */
function release(stop = false): void {
  if (stop) holding = false;
  for (const h of held) if (!h.closed && !h.res.headersSent) answer(h.res);
}

/** OpenClaw's config with the fake model as the default agent's model. */
const withModel = (config: Record<string, unknown>): Record<string, unknown> => withFakeModel(config, model.baseUrl);

function configWith(hooks: HooksBlock, entry: Record<string, unknown> = {}, plugins: Record<string, unknown> = {}) {
  const config = withModel(gatewayConfig(files, hooks));
  const p = config.plugins as { entries: { hookgate: Record<string, unknown> } };
  return {
    ...config,
    plugins: { ...p, ...plugins, entries: { ...p.entries, hookgate: { ...p.entries.hookgate, ...entry } } },
  };
}

async function post(pathname: string, body: unknown): Promise<{ status: number; json: any; text: string }> {
  const res = await fetch(`${gw.url}${pathname}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${HOOKS.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, json, text };
}

async function queued(): Promise<string[]> {
  return ((await gw.call('status')).queuedSystemEvents as string[] | undefined) ?? [];
}

/** The plugin's journal of acknowledged events and runs, as a start would read it. */
async function journal(): Promise<Pending> {
  const found = (await readdir(files.stateDir, { recursive: true })).find(
    (f) => path.basename(f) === 'acknowledged.jsonl',
  );
  if (!found) return { events: [], runs: [], interrupted: [], keys: [] };
  return pendingOf(parseLines(await readFile(path.join(files.stateDir, found), 'utf8')));
}

const count = (list: readonly string[], item: string): number => list.filter((x) => x === item).length;
/** A failed run's summary ends naming its failure id: counted by what comes before it. */
const countSummaries = (list: readonly string[], summary: string): number =>
  list.filter((x) => x === summary || x.startsWith(`${summary} (failure fail_`)).length;

describe('hookgate keeps its promises inside OpenClaw', { timeout: 8 * 60_000 }, () => {
  before(
    async () => {
      ({ files, gw, model } = await startModelGateway(HOOKS, answerAsModel));
    },
    { timeout: 5 * 60_000 },
  );

  after(() => stopModelGateway({ files, gw, model }));

  test('agent tools: listed by OpenClaw, and hookgate_recent / hookgate_status answer through the gateway', async () => {
    const wake = await post('/hooks/wake', { text: `tools probe ${nonce}`, mode: 'next-heartbeat' });
    assert.equal(wake.status, 200, wake.text);
    const catalog = JSON.stringify(await gw.call('tools.catalog', { includePlugins: true }));
    assert.ok(catalog.includes('"hookgate_status"') && catalog.includes('"hookgate_recent"'), catalog.slice(0, 500));

    const recent = await gw.call('tools.invoke', { name: 'hookgate_recent', args: { hook: 'wake' } });
    assert.equal(recent.ok, true, JSON.stringify(recent));
    const requests = (recent.output as any).details.requests as { path: string; status: number }[];
    assert.ok(
      requests.some((r) => r.path === '/hooks/wake' && r.status === 200),
      JSON.stringify(requests),
    );
    // The request log holds no payload and no token.
    const shown = JSON.stringify(recent);
    assert.ok(!shown.includes(`tools probe ${nonce}`) && !shown.includes(HOOKS.token), shown);

    const status = await gw.call('tools.invoke', { name: 'hookgate_status' });
    const details = (status.output as any).details;
    assert.equal(details.enabled, true);
    assert.equal(details.path, '/hooks');
    assert.deepEqual(
      details.hooks.map((h: { id: string }) => h.id),
      ['wake', 'agent'],
    );
    assert.ok(details.counts.accepted >= 1, JSON.stringify(details.counts));
  });

  test('thinking: OpenClaw makes the run with the requested level (reasoning_effort reaches the model)', async () => {
    const prompt = `think ${nonce}`;
    const r = await post('/hooks/agent', {
      message: prompt,
      name: `think-${nonce}`,
      thinking: 'high',
      deliver: false,
      wakeMode: 'next-heartbeat',
    });
    assert.equal(r.status, 202, r.text);
    await gw.until('the run summary', 60_000, async () =>
      (await queued()).find((e) => e.startsWith(`Hook think-${nonce}:`)),
    );
    const request = model.requests.find((q) => JSON.stringify(q.body.messages ?? '').includes(prompt));
    assert.equal(request?.body.reasoning_effort, 'high', JSON.stringify(request?.body).slice(0, 300));
  });

  test('timeoutSeconds: hookgate gives up and OpenClaw stops the run (its model request is closed)', async () => {
    const name = `slow-${nonce}`;
    const r = await post('/hooks/agent', {
      message: `${HOLD} timeout ${nonce}`,
      name,
      timeoutSeconds: 2,
      deliver: false,
      wakeMode: 'next-heartbeat',
    });
    assert.equal(r.status, 202, r.text);
    await gw.until('the timeout summary', 60_000, async () =>
      (await queued()).find((e) => e.startsWith(`Hook ${name} (timeout):`)),
    );
    await gw.until('the model request closed by OpenClaw', 30_000, async () =>
      held.find((h) => h.text.includes(`timeout ${nonce}`) && h.closed),
    );
  });

  test('10 config edits: applied by the plugin, and no call of it retired by OpenClaw', async () => {
    for (let i = 1; i <= 10; i++) {
      const from = gw.lines.length;
      await writeConfigAtomic(files.configPath, configWith({ ...HOOKS, maxBodyBytes: 100_000 + i }));
      await gw.waitForLine(/config reloaded changed=plugins\.entries\.hookgate\.config\.maxBodyBytes/, 30_000, from);
      await gw.waitForLine(/config change detected/, 30_000, from);
    }
    // An absence: OpenClaw reports a retirement within its drain time of the last reload's loads.
    await new Promise((r) => setTimeout(r, OPENCLAW_RETIREMENT_MS + 2_000));
    assert.equal(gw.count(/forced retirement/), 0, gw.lines.filter((l) => /retire/.test(l)).join('\n'));
    const wake = await post('/hooks/wake', { text: `after edits ${nonce}`, mode: 'next-heartbeat' });
    assert.equal(wake.status, 200, wake.text);
  });

  test('disabling the plugin during a run: the stop posts the interrupted summary, within budget; enabling brings hooks back', async () => {
    const name = `stopped-${nonce}`;
    const r = await post('/hooks/agent', {
      message: `${HOLD} stop ${nonce}`,
      name,
      deliver: false,
      wakeMode: 'next-heartbeat',
    });
    assert.equal(r.status, 202, r.text);
    await gw.until('the held model request', 60_000, async () => held.find((h) => h.text.includes(`stop ${nonce}`)));
    let from = gw.lines.length;
    await writeConfigAtomic(files.configPath, configWith(HOOKS, { enabled: false }));
    await gw.waitForLine(/config hot reload applied/, 60_000, from);
    const summary = `Hook ${name} (error): interrupted: the gateway shut down before the run finished`;
    assert.equal(countSummaries(await queued(), summary), 1, JSON.stringify(await queued()));
    // Within OpenClaw's stop budget: no stop timed out, no call retired.
    assert.equal(gw.count(/forced retirement|stop failed|timed out after/), 0, gw.tail(30));

    from = gw.lines.length;
    await writeConfigAtomic(files.configPath, configWith(HOOKS));
    await comesBack('enabled again', from);
    // The new service found the summary in OpenClaw's queue: not handed over twice.
    assert.equal(countSummaries(await queued(), summary), 1, JSON.stringify(await queued()));
    // The allowlist widened (a plugin added): another plugin reload, and hookgate serves again.
    from = gw.lines.length;
    await writeConfigAtomic(files.configPath, configWith(HOOKS, {}, { allow: ['hookgate', 'memory-core'] }));
    await comesBack('allowlist changed', from);
    assert.equal(gw.count(/forced retirement|stop failed|timed out after/), 0, gw.tail(30));
    // OpenClaw's own run of it goes on; it is answered, so it frees OpenClaw's agent lane.
    release();
  });

  test('kill -9: an acknowledged wake and a waiting run are handed to OpenClaw again, exactly once', async () => {
    // Taken in before the kill: asked for at once, read by the heartbeat's turn.
    const taken = `taken before kill ${nonce}`;
    assert.equal((await post('/hooks/wake', { text: taken, mode: 'now' })).status, 200);
    await gw.until('the heartbeat reading the event', 60_000, async () =>
      asked().some((t) => t.includes(taken)) && !(await queued()).includes(taken) ? true : undefined,
    );
    await gw.until('the event noted as taken in', 10_000, async () =>
      (await journal()).events.some((e) => e.text === taken) ? undefined : true,
    );
    // Acknowledged, left for the next heartbeat.
    const waiting = `acknowledged before kill ${nonce}`;
    assert.equal((await post('/hooks/wake', { text: waiting, mode: 'next-heartbeat' })).status, 200);
    // A run OpenClaw holds, and one acknowledged behind it that OpenClaw has not seen.
    const first = await post('/hooks/agent', {
      message: `${HOLD} first ${nonce}`,
      name: `first-${nonce}`,
      deliver: false,
      wakeMode: 'next-heartbeat',
    });
    assert.equal(first.status, 202, first.text);
    await gw.until('the first run taken by OpenClaw', 60_000, async () =>
      (await journal()).interrupted.some((r) => r.runId === first.json.runId) ? true : undefined,
    );
    const secondPrompt = `second run ${nonce}`;
    const second = await post('/hooks/agent', {
      message: secondPrompt,
      name: `second-${nonce}`,
      deliver: false,
      wakeMode: 'next-heartbeat',
    });
    assert.equal(second.status, 202, second.text);
    assert.ok(!asked().some((t) => t.includes(secondPrompt)), 'the second run waits in hookgate');

    await gw.kill();
    // OpenClaw may run the first run again itself after its restart: answered, it frees the lane.
    release(true);
    gw = launchGateway(files);
    await gw.waitForLine(/hookgate ready/, 120_000);

    const events = await gw.until('the acknowledged wake back in OpenClaw', 60_000, async () => {
      const q = await queued();
      return q.includes(waiting) ? q : undefined;
    });
    assert.equal(count(events, waiting), 1, JSON.stringify(events));
    assert.equal(count(events, taken), 0, 'an event taken in before the kill is not handed back');
    const summary = await gw.until('the second run, run after the restart', 90_000, async () =>
      (await queued()).find((e) => e.startsWith(`Hook second-${nonce}:`)),
    );
    assert.equal(
      asked().filter((t) => t.includes(secondPrompt)).length,
      1,
      'OpenClaw was asked for the second run once',
    );
    const after = await queued();
    assert.equal(count(after, summary), 1);
    assert.equal(count(after, waiting), 1);
    assert.ok(
      after.some((e) => e.startsWith(`Hook first-${nonce} (error): interrupted: the gateway restarted`)),
      JSON.stringify(after),
    );
    // What is left in the journal is what OpenClaw still holds unread: no run, and only queued events.
    const left = await journal();
    assert.deepEqual([left.runs, left.interrupted], [[], []]);
    assert.ok(
      left.events.every((e) => after.includes(e.text)),
      JSON.stringify(left.events.map((e) => e.text)),
    );
  });
});

/**
 * Hooks serve again after a plugin reload: once OpenClaw says the reload is applied, 503 (with
 * Retry-After) while the service starts, then 200; never 404.
 */
async function comesBack(what: string, from: number): Promise<void> {
  await gw.waitForLine(/config hot reload applied/, 60_000, from);
  const seen: number[] = [];
  await gw.until(`hooks serving (${what})`, 90_000, async () => {
    const r = await post('/hooks/wake', { text: `back ${what} ${nonce}`, mode: 'next-heartbeat' });
    seen.push(r.status);
    return r.status === 200 ? true : undefined;
  });
  assert.ok(
    seen.every((s) => s === 200 || s === 503),
    `${what}: answers ${seen.join(',')} after the reload\n${gw.tail(30)}`,
  );
  for (let i = 0; i < 5; i++) {
    const r = await post('/hooks/wake', { text: `still ${what} ${i} ${nonce}`, mode: 'next-heartbeat' });
    assert.equal(r.status, 200, `${what}: ${r.text} (seen ${seen.join(',')})`);
  }
}
