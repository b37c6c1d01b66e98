// GET /api/hooks/<name> over loopback HTTP: a hook's settings as configured, every secret shown as
// where it comes from ("set", "from ${NAME}", "from file"), never its value; paused and held with it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withGateway, type TestGateway, HOOK_TOKEN } from '../helpers/recording-host.ts';
import { assertError } from '../helpers/common.ts';

const ENV_SECRET = 'env-secret-value-0123456789-CANARY';
const FILE_SECRET = 'file-secret-value-0123456789-CANARY';
const PLAIN_SECRET = 'plain-secret-value-0123456789-CANARY';

async function get(gw: TestGateway, p: string): Promise<{ status: number; text: string; body: any }> {
  const res = await fetch(`${gw.url}/api/${p}`);
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) };
}

test("a hook's settings, secrets shown as their source only", async () => {
  process.env.HOOK_SETTINGS_TEST_SECRET = ENV_SECRET;
  await withGateway(
    {
      files: { 'gh.secret': FILE_SECRET },
      hooks: {
        endpoints: { wake: { rateLimit: { requests: 10, perSeconds: 60 } } },
        mappings: [
          {
            id: 'github',
            match: { path: 'github' },
            action: 'wake',
            textTemplate: 'push',
            verify: { scheme: 'github', secret: '${HOOK_SETTINGS_TEST_SECRET}' },
          },
          {
            id: 'stripe',
            match: { path: 'stripe' },
            action: 'wake',
            textTemplate: 'paid',
            verify: { scheme: 'github', secretFile: 'gh.secret' },
          },
          {
            id: 'linear',
            match: { path: 'linear' },
            action: 'agent',
            messageTemplate: 'issue',
            verify: { scheme: 'github', secret: PLAIN_SECRET },
          },
        ],
      },
    },
    async (gw) => {
      const github = await get(gw, 'hooks/github');
      assert.equal(github.status, 200);
      assert.deepEqual(github.body.hook, {
        name: 'github',
        action: 'wake',
        paused: false,
        held: 0,
        settings: {
          id: 'github',
          match: { path: 'github' },
          action: 'wake',
          textTemplate: 'push',
          verify: { scheme: 'github', secret: 'from ${HOOK_SETTINGS_TEST_SECRET}' },
        },
      });
      assert.deepEqual((await get(gw, 'hooks/stripe')).body.hook.settings.verify, {
        scheme: 'github',
        secretFile: 'from file',
      });
      const linear = await get(gw, 'hooks/linear');
      assert.equal(linear.body.hook.action, 'agent');
      assert.deepEqual(linear.body.hook.settings.verify, { scheme: 'github', secret: 'set' });
      const wake = await get(gw, 'hooks/wake');
      assert.deepEqual(wake.body.hook.settings, {
        path: '/hooks/wake',
        auth: 'hook token',
        token: 'set',
        rateLimit: { requests: 10, perSeconds: 60 },
      });
      for (const r of [github, linear, wake, await get(gw, 'hooks/stripe')]) {
        for (const secret of [ENV_SECRET, FILE_SECRET, PLAIN_SECRET, HOOK_TOKEN]) assert.ok(!r.text.includes(secret));
      }
      assertError(await get(gw, 'hooks/nope'), 404, 'not_found', /no hook named "nope"/);
    },
  );
});
