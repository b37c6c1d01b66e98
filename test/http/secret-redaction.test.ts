// The core masks the host's credentials (GatewayHost.secrets) in every text a peer brings back,
// whatever form the peer echoed them in: a run's error and its reply, a delivery's description, and
// so the run records, the summaries, the chat, the failures and the log lines made of them. OpenClaw
// relies on this: its channels and providers are OpenClaw's, which redact nothing of ours.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { post, withGateway, type TestGateway } from '../helpers/recording-host.ts';
import { waitUntil } from '../helpers/common.ts';

const SECRET = 'channel-credential/0123456789+ABCdef';

function leaked(gw: TestGateway): string[] {
  const everything = {
    events: gw.rec.events.map((e) => e.text),
    deliveries: gw.rec.deliveries.map((d) => d.text),
    runs: gw.rec.runUpdates,
    logs: gw.rec.logs,
  };
  const text = JSON.stringify(everything)
    .replace(/[\u200b-\u200f]/g, '')
    .toLowerCase();
  const base64 = Buffer.from(SECRET).toString('base64').slice(0, 40).toLowerCase();
  return [SECRET.toLowerCase(), base64].filter((needle) => text.includes(needle));
}

async function failureReasons(gw: TestGateway): Promise<string[]> {
  const page = (await gw.plugin.admin({
    method: 'GET',
    parts: ['failures'],
    query: new URLSearchParams('state=all'),
    body: async () => undefined,
  })) as { failures: { lastError: string }[] };
  return page.failures.map((f) => f.lastError);
}

test("a run's error and reply, and a delivery's description, come back with the host's secrets masked", async () => {
  await withGateway(
    {
      secrets: [SECRET],
      turn: async (turn) =>
        turn.prompt.includes('fail')
          ? { status: 'error', error: `provider said: bad key ${Buffer.from(SECRET).toString('base64')}` }
          : { status: 'ok', reply: `echo of ${SECRET.toUpperCase()}` },
      send: async (d) =>
        d.to === 'refuse'
          ? {
              status: 'failed',
              retryable: false,
              description: `blocked: ${[...SECRET].join('\u200b')}`,
              sentParts: 0,
              messageIds: [],
            }
          : { status: 'sent', messageIds: ['1'] },
    },
    async (gw) => {
      const ids: string[] = [];
      for (const body of [
        { message: 'fail please', name: 'Fails' },
        { message: 'echo please', name: 'Echoes', channel: 'telegram', to: '7' },
        { message: 'refused please', name: 'Refused', channel: 'telegram', to: 'refuse' },
      ]) {
        const r = await post(gw.url, '/hooks/agent', body);
        assert.equal(r.status, 202);
        ids.push(r.body.runId);
      }
      const finals = await Promise.all(ids.map((id) => gw.finalRun(id, 60_000)));
      assert.equal(finals[0]!.error, 'provider said: bad key [redacted]');
      assert.equal(finals[1]!.reply, 'echo of [redacted]');
      await waitUntil(async () => (await failureReasons(gw)).length === 2, 'two failures', 60_000);
      const reasons = await failureReasons(gw);
      assert.ok(reasons.includes('blocked: [redacted]'), JSON.stringify(reasons));
      assert.ok(gw.rec.deliveries.some((d) => d.text === 'echo of [redacted]'));
      await waitUntil(
        () => gw.rec.events.some((e) => e.text.includes('the delivery to telegram failed')),
        'the dead letter is told',
        60_000,
      );
      assert.deepEqual(leaked(gw), []);
    },
  );
});
