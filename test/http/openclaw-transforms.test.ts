// Transforms written for OpenClaw's built-in hooks run unchanged: their context has `url` (a URL
// object) beside payload, headers and path, and they may answer with OpenClaw's names (`kind`, and
// `mode` for a wake). Senders keep their `x-openclaw-token` header.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HOOK_TOKEN, post, withGateway } from '../helpers/recording-host.ts';

const T = 'hooks/transforms';
// As OpenClaw's docs write them: ctx.url.searchParams, kind/mode in the result.
const files = {
  [`${T}/oc-wake.js`]: `export default function transform(ctx) {
  return { kind: 'wake', mode: 'next-heartbeat',
    text: [ctx.path, ctx.url.pathname, ctx.url.searchParams.get('env'), ctx.url instanceof URL, ctx.payload.event, ctx.headers['x-source'], ctx.headers['x-openclaw-token'] ?? 'hidden'].join('|') };
}`,
  [`${T}/oc-agent.ts`]: `export async function transform(ctx: { payload: { title: string }; url: URL }) {
  return { kind: 'agent' as const, message: 'Ticket ' + ctx.payload.title + ' from ' + ctx.url.host, name: 'Tickets', mode: 'next-heartbeat' };
}`,
};

test('an OpenClaw-style transform: url, kind and mode, reached with x-openclaw-token', async () => {
  await withGateway(
    {
      files,
      hooks: {
        mappings: [
          {
            id: 'legacy',
            match: { path: 'legacy' },
            action: 'agent',
            allowUnsafeExternalContent: true,
            transform: { module: 'oc-wake.js' },
          },
          {
            id: 'tickets',
            match: { path: 'tickets' },
            action: 'wake',
            deliver: false,
            transform: { module: 'oc-agent.ts', export: 'transform' },
          },
        ],
      },
    },
    async (gw) => {
      const headers = { 'x-openclaw-token': HOOK_TOKEN, 'x-source': 'ci' };
      const wake = await post(gw.url, '/hooks/legacy?env=prod', { event: 'deploy' }, { token: null, headers });
      assert.equal(wake.status, 200, JSON.stringify(wake.body));
      assert.deepEqual(wake.body, { ok: true, mode: 'next-heartbeat' });
      assert.equal(gw.rec.events.at(-1)!.text, 'legacy|/hooks/legacy|prod|true|deploy|ci|hidden');
      assert.equal(gw.rec.heartbeats.length, 0, 'next-heartbeat: no heartbeat asked for');

      // kind: 'agent' over a wake mapping; `mode` is a wake's, so the run keeps its default wakeMode.
      const run = await post(gw.url, '/hooks/tickets', { title: 'T-1' }, { token: null, headers });
      assert.equal(run.status, 202, JSON.stringify(run.body));
      await gw.finalRun(run.body.runId);
      assert.match(gw.rec.turns.at(-1)!.prompt, /Ticket T-1 from localhost/);
      assert.ok(gw.rec.events.some((e) => e.text.startsWith('Hook Tickets')));
    },
  );
});
