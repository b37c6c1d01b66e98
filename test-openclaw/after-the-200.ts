// "After the 200" inside a real OpenClaw: the admin API under /hookgate/api/ behind OpenClaw's gateway
// auth, the agent tools over it, and retries of runs: OpenClaw reports a model provider's failure to
// the plugin by a sentence; a 503 may pass (hookgate tries the run again), a 400 does not.
// With the failures and pause branches: a failed run listed and replayed, a paused hook holding a
// signed delivery until resumed. Registered by run.ts; its gateway and model are its own.
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { sign } from '@octokit/webhooks-methods';
import {
  type GatewayFiles,
  type HooksBlock,
  type RunningGateway,
  startModelGateway,
  stopModelGateway,
} from './openclaw-env.ts';
import { classifyRunError } from '../plugin/hosts/openclaw/passing-failure.ts';
import { streamReply, type FakeProvider, type ProviderRequest } from '../test/helpers/fake-provider.ts';

const nonce = Math.random().toString(36).slice(2, 8);
const GITHUB_SECRET = `github-secret-${nonce}`;

const HOOKS: HooksBlock = {
  enabled: true,
  token: `hook-after-${nonce}-0123456789`,
  path: '/hooks',
  defaultSessionKey: 'hook:ingress',
  allowRequestSessionKey: true,
  allowedSessionKeyPrefixes: ['hook:'],
  // A failed try waits 2.5 to 5 s for the next: long enough to see the run retrying.
  retry: { attempts: 3, initialDelaySeconds: 5, maxDelaySeconds: 5 },
  mappings: [
    {
      id: 'github',
      match: { path: 'github' },
      action: 'wake',
      wakeMode: 'next-heartbeat',
      textTemplate: `github ping held ${nonce}`,
      verify: { scheme: 'github', secret: GITHUB_SECRET },
    },
  ],
};

/** While on, a prompt naming FLAKY is answered 503, one naming REFUSE 400. */
let flaky = false;
let refusing = false;

/** The fake model: a prompt naming FAIL-<status> is answered with that status, others with a reply. */
function answerAsModel(req: ProviderRequest, res: ServerResponse): void {
  const text = JSON.stringify(req.body.messages ?? '');
  const failing =
    flaky && text.includes('FLAKY')
      ? ['', '503']
      : refusing && text.includes('REFUSE')
        ? ['', '400']
        : /FAIL-(\d{3})/.exec(text);
  if (!failing) return streamReply(res, `done ${nonce}`);
  res.writeHead(Number(failing[1]), { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { message: `fake failure ${failing[1]}`, type: 'server_error' } }));
}

let files: GatewayFiles;
let gw: RunningGateway;
let model: FakeProvider;

interface Answer {
  status: number;
  text: string;
  json: any;
}

async function send(pathname: string, opts: { token?: string; method?: string; body?: unknown } = {}): Promise<Answer> {
  const res = await fetch(`${gw.url}${pathname}`, {
    method: opts.method ?? 'GET',
    headers: {
      ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
      ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, text, json };
}

const queued = async (): Promise<string[]> =>
  ((await gw.call('status')).queuedSystemEvents as string[] | undefined) ?? [];

const admin = (rest: string, opts: { method?: string; body?: unknown } = {}): Promise<Answer> =>
  send(`/hookgate/api/${rest}`, { ...opts, token: files.gatewayToken });

/** Posts an agent run in its own session and resolves with its summary on the main session. */
async function runToSummary(name: string, message: string): Promise<{ runId: string; summary: string }> {
  const r = await send('/hooks/agent', {
    method: 'POST',
    token: HOOKS.token,
    body: { message, name, sessionKey: `hook:${name}`, deliver: false, wakeMode: 'next-heartbeat' },
  });
  assert.equal(r.status, 202, r.text);
  // OpenClaw tries a failing provider again itself for up to 90 s before it gives the run up.
  const summary = await gw.until(`the summary of ${name}`, 240_000, async () =>
    ((await gw.call('status')).queuedSystemEvents as string[] | undefined)?.find((e) => e.startsWith(`Hook ${name}`)),
  );
  return { runId: r.json.runId as string, summary };
}

describe('after the 200, inside OpenClaw', { timeout: 10 * 60_000 }, () => {
  before(
    async () => {
      ({ files, gw, model } = await startModelGateway(HOOKS, answerAsModel));
    },
    { timeout: 5 * 60_000 },
  );

  after(() => stopModelGateway({ files, gw, model }));

  test('the admin API answers under /hookgate/api/ only behind the gateway token', async () => {
    const wake = await send('/hooks/wake', { method: 'POST', token: HOOKS.token, body: { text: `admin ${nonce}` } });
    assert.equal(wake.status, 200, wake.text);
    // OpenClaw refuses before the plugin: no token, or the hook token.
    assert.equal((await send('/hookgate/api/requests')).status, 401);
    assert.equal((await send('/hookgate/api/requests', { token: HOOKS.token })).status, 401);
    const r = await admin('requests?limit=10');
    assert.equal(r.status, 200, r.text);
    assert.ok(
      r.json.requests.some((e: { path: string; status: number }) => e.path === '/hooks/wake' && e.status === 200),
      r.text,
    );
    assert.ok(!r.text.includes(`admin ${nonce}`), 'no payload in the request log');
    // The project's error bodies, from the plugin.
    const missing = await admin('no-such-thing');
    assert.equal(missing.status, 404, missing.text);
    assert.deepEqual([missing.json.ok, missing.json.code], [false, 'not_found']);
    const limit = await admin('requests?limit=0');
    assert.deepEqual([limit.status, limit.json.code], [400, 'bad_request']);
  });

  test('GET runs/<id> and hookgate_replay without confirm show a run; nothing is replayed', async () => {
    const { runId, summary } = await runToSummary(`ok-${nonce}`, `hello ${nonce}`);
    assert.equal(summary, `Hook ok-${nonce}: done ${nonce}`);
    const run = await admin(`runs/${runId}`);
    assert.equal(run.status, 200, run.text);
    assert.deepEqual([run.json.runId, run.json.status], [runId, 'ok']);
    assert.ok(!run.text.includes(`done ${nonce}`), 'the reply text is not shown');

    const catalog = JSON.stringify(await gw.call('tools.catalog', { includePlugins: true }));
    for (const name of ['hookgate_failures', 'hookgate_replay', 'hookgate_pause', 'hookgate_resume'])
      assert.ok(catalog.includes(`"${name}"`), `${name} is not in OpenClaw's tool catalog`);
    const asked = model.requests.length;
    const preview = await gw.call('tools.invoke', { name: 'hookgate_replay', args: { runId } });
    assert.equal(preview.ok, true, JSON.stringify(preview));
    const details = (preview.output as any).details;
    assert.equal(details.replayed, false);
    assert.equal(details.wouldCall, `POST /hookgate/api/runs/${runId}/replay`);
    assert.deepEqual([details.run.runId, details.run.status], [runId, 'ok']);
    assert.equal(model.requests.length, asked, 'no run was started');
  });

  test('a run whose model answered 503 is tried again by hookgate (a new OpenClaw run) and ends ok: one summary, every try', async () => {
    const name = `flaky-${nonce}`;
    flaky = true;
    const r = await send('/hooks/agent', {
      method: 'POST',
      token: HOOKS.token,
      body: { message: `FLAKY ${nonce}`, name, sessionKey: `hook:${name}`, deliver: false, wakeMode: 'next-heartbeat' },
    });
    assert.equal(r.status, 202, r.text);
    const runId = r.json.runId as string;
    // OpenClaw tries the model again itself for up to 90 s, then reports the run failed; hookgate schedules its next try.
    const retrying = await gw.until('the run retrying', 240_000, async () => {
      const run = await admin(`runs/${runId}`);
      return run.json?.attempts?.length >= 1 ? run.json : undefined;
    });
    flaky = false;
    assert.equal(retrying.attempts[0].status, 'error');
    assert.equal(classifyRunError(retrying.attempts[0].error).retryable, true, retrying.attempts[0].error);
    const summary = await gw.until(`the summary of ${name}`, 240_000, async () =>
      ((await gw.call('status')).queuedSystemEvents as string[] | undefined)?.find((e) => e.startsWith(`Hook ${name}`)),
    );
    assert.equal(summary, `Hook ${name}: done ${nonce}`);
    const run = await admin(`runs/${runId}`);
    assert.equal(run.json.status, 'ok', run.text);
    assert.deepEqual(
      run.json.attempts.map((a: { status: string }) => a.status),
      ['error', 'ok'],
    );
    const summaries = ((await gw.call('status')).queuedSystemEvents as string[]).filter((e) =>
      e.startsWith(`Hook ${name}`),
    );
    assert.equal(summaries.length, 1, JSON.stringify(summaries));
  });

  test('a run whose model refused the request (400) is not tried again', async () => {
    const name = `p400-${nonce}`;
    const refused = await runToSummary(name, `FAIL-400 ${nonce}`);
    assert.ok(refused.summary.startsWith(`Hook ${name} (error): `), refused.summary);
    const reason = refused.summary.slice(`Hook ${name} (error): `.length);
    assert.equal(classifyRunError(reason).retryable, false, refused.summary);
    const run = await admin(`runs/${refused.runId}`);
    assert.equal(run.json.status, 'error', run.text);
    assert.equal(run.json.attempts, undefined, 'tried once');
  });
  test('a failed run is listed by GET /hookgate/api/failures and hookgate_failures, and replayed with confirm once', async () => {
    const name = `refused-${nonce}`;
    refusing = true;
    const failed = await runToSummary(name, `REFUSE ${nonce}`);
    assert.ok(failed.summary.startsWith(`Hook ${name} (error): `), failed.summary);
    const listed = await gw.until('the failure listed', 30_000, async () => {
      const r = await admin(`failures?hook=${encodeURIComponent(name)}`);
      return r.json?.failures?.find((f: { runId: string }) => f.runId === failed.runId);
    });
    assert.deepEqual([listed.kind, listed.hook, listed.state, listed.attempts], ['run', name, 'open', 1]);
    const tool = await gw.call('tools.invoke', { name: 'hookgate_failures', args: { hook: name } });
    assert.equal(tool.ok, true, JSON.stringify(tool));
    assert.deepEqual(
      (tool.output as any).details.failures.map((f: { id: string }) => f.id),
      [listed.id],
    );
    refusing = false;
    const replay = await gw.call('tools.invoke', {
      name: 'hookgate_replay',
      args: { failureId: listed.id, confirm: true },
    });
    assert.equal(replay.ok, true, JSON.stringify(replay));
    const replayed = (replay.output as any).details;
    assert.equal(replayed.replayOf, failed.runId);
    const again = await admin(`failures/${listed.id}/replay`, { method: 'POST' });
    assert.equal(again.status, 202, again.text);
    assert.deepEqual([again.json.runId, again.json.duplicate], [replayed.runId, true]);
    const run = await gw.until('the replayed run ok', 120_000, async () => {
      const r = await admin(`runs/${replayed.runId}`);
      return r.json?.status === 'ok' ? r.json : undefined;
    });
    assert.equal(run.runId, replayed.runId);
    const after = await admin(`failures?state=all&hook=${encodeURIComponent(name)}`);
    const closed = after.json.failures.find((f: { id: string }) => f.id === listed.id);
    assert.deepEqual([closed.state, closed.replayedBy], ['replayed', replayed.runId]);
  });

  test('hookgate_pause holds a signed GitHub delivery (202 held), hookgate_resume hands it to OpenClaw', async () => {
    const paused = await gw.call('tools.invoke', { name: 'hookgate_pause', args: { hook: 'github' } });
    assert.equal(paused.ok, true, JSON.stringify(paused));
    assert.equal((paused.output as any).details.paused, true);
    const body = JSON.stringify({ zen: `held ${nonce}` });
    const r = await fetch(`${gw.url}/hooks/github`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'issues',
        'x-github-delivery': `held-${nonce}`,
        'x-hub-signature-256': await sign(GITHUB_SECRET, body),
      },
      body,
    });
    const held = (await r.json()) as { ok: boolean; held: boolean };
    assert.equal(r.status, 202);
    assert.deepEqual([held.ok, held.held], [true, true]);
    const hooks = await admin('hooks');
    assert.deepEqual(
      hooks.json.hooks.find((h: { name: string }) => h.name === 'github'),
      { name: 'github', paused: true, held: 1 },
    );
    const text = `github ping held ${nonce}`;
    assert.ok(!(await queued()).some((e) => e.includes(text)), 'held, not handed to OpenClaw');
    const resumed = await gw.call('tools.invoke', { name: 'hookgate_resume', args: { hook: 'github' } });
    assert.equal(resumed.ok, true, JSON.stringify(resumed));
    await gw.until('the held wake in OpenClaw', 60_000, async () =>
      (await queued()).some((e) => e.includes(text)) ? true : undefined,
    );
  });
});
