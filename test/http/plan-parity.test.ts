// One planner for the live path and the dry run (`hookgate webhooks test`): the same requests sent
// over HTTP and given to dryRun come out as the same plan (the live one is read off the act
// phase, which still carries it out), the same handshake answer, or the same refusal.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { sign as githubSign } from '@octokit/webhooks-methods';
import { post, withGateway, type TestGateway } from '../helpers/recording-host.ts';
import { Actor } from '../../plugin/request/act.ts';
import { dryRun } from '../../plugin/dry-run.ts';
import { keyBeforeBody, type Plan } from '../../plugin/request/plan.ts';
import { targetOf } from '../../plugin/request/resolve.ts';
import type { Transforms } from '../../plugin/mappings/build-action.ts';

const GH_SECRET = 'github-secret-for-the-plan-0123';
const SLACK_SECRET = 'slack-signing-secret-for-the-plan';

const hooks = {
  mappings: [
    {
      id: 'ci',
      match: { path: 'ci' },
      action: 'wake',
      textTemplate: 'build {{status}} on {{query.branch}} for {{headers.x-ci-user}}',
    },
    {
      id: 'github',
      match: { path: 'github' },
      action: 'agent',
      deliver: false,
      messageTemplate: 'push to {{repository.full_name}}',
      verify: { scheme: 'github', secret: GH_SECRET },
    },
    {
      id: 'alerts',
      match: { path: 'alerts' },
      action: 'wake',
      forEach: 'alerts',
      textTemplate: 'alert {{item.id}}',
      dedupe: { key: '{{item.id}}' },
    },
    {
      id: 'slack',
      match: { path: 'slack' },
      action: 'wake',
      textTemplate: 'slack {{type}}',
      verify: { scheme: 'slack', secret: SLACK_SECRET },
      handshake: { kind: 'slack' },
    },
  ],
};

interface Fixture {
  name: string;
  path: string;
  body: string;
  headers: Record<string, string>;
}

const githubBody = JSON.stringify({ ref: 'refs/heads/main', repository: { full_name: 'octo/hello' } });
const slackBody = JSON.stringify({ type: 'url_verification', challenge: 'slack-challenge-3' });

async function fixtures(): Promise<Fixture[]> {
  const slackTs = String(Math.floor(Date.now() / 1000));
  const slackSig = createHmac('sha256', SLACK_SECRET).update(`v0:${slackTs}:${slackBody}`).digest('hex');
  return [
    {
      name: 'wake',
      path: 'wake',
      body: JSON.stringify({ text: 'deploy done', mode: 'next-heartbeat' }),
      headers: { 'idempotency-key': 'wake-plan-1' },
    },
    { name: 'agent', path: 'agent', body: JSON.stringify({ message: 'summarise', deliver: false }), headers: {} },
    {
      name: 'a templated mapping',
      path: 'ci?branch=main',
      body: JSON.stringify({ status: 'green' }),
      headers: { 'x-ci-user': 'ada' },
    },
    {
      name: 'a signed GitHub delivery',
      path: 'github',
      body: githubBody,
      headers: {
        'x-github-event': 'push',
        'x-github-delivery': 'plan-delivery-1',
        'x-hub-signature-256': await githubSign(GH_SECRET, githubBody),
      },
    },
    {
      name: 'a forEach keyed by its items',
      path: 'alerts',
      body: JSON.stringify({ alerts: [{ id: 'a1' }, { id: 'a2' }] }),
      headers: {},
    },
    {
      name: 'a Slack handshake',
      path: 'slack',
      body: slackBody,
      headers: { 'x-slack-signature': `v0=${slackSig}`, 'x-slack-request-timestamp': slackTs },
    },
    {
      name: 'a refusal: a GitHub delivery signed with another secret',
      path: 'github',
      body: githubBody,
      headers: {
        'x-github-event': 'push',
        'x-github-delivery': 'plan-delivery-2',
        'x-hub-signature-256': await githubSign('another-secret-entirely-0123', githubBody),
      },
    },
    {
      name: 'a refusal: an agent request with a blank message',
      path: 'agent',
      body: JSON.stringify({ message: '   ' }),
      headers: {},
    },
  ];
}

/** What a plan says, with the request's headers narrowed to the ones the fixture set (the HTTP client adds its own). */
function comparable(plan: Plan, sent: Record<string, string>): unknown {
  if (plan.kind === 'handshake' || plan.kind === 'endpoint' || plan.kind === 'ignored') return plan;
  const headers = Object.fromEntries(Object.keys(sent).map((k) => [k, plan.request.headers[k]]));
  return { ...plan, request: { ...plan.request, headers, query: String(plan.request.query) } };
}

const NO_TRANSFORMS: Transforms = {
  run: () => Promise.reject(new Error('no mapping here has a transform')),
};

async function both(t: TestContext, gw: TestGateway, f: Fixture) {
  const deliver = t.mock.method(Actor.prototype, 'act');
  const live = await post(gw.url, `/hooks/${f.path}`, undefined, { rawBody: f.body, headers: f.headers });
  const [name, query] = f.path.split('?') as [string, string | undefined];
  const dry = await dryRun(
    { name, query, headers: { 'content-type': 'application/json', ...f.headers }, body: Buffer.from(f.body) },
    gw.plugin.snapshot(),
    gw.host,
    NO_TRANSFORMS,
  );
  const plans = deliver.mock.calls.map((c) => c.arguments[0] as Plan);
  deliver.mock.restore();
  return { live, dry, plans };
}

test('the live path and the dry run plan the same requests the same way', async (t) => {
  await withGateway({ hooks }, async (gw) => {
    const kinds: string[] = [];
    for (const f of await fixtures()) {
      const { live, dry, plans } = await both(t, gw, f);
      if (dry.refusal) {
        assert.equal(plans.length, 0, `${f.name}: refused, so nothing is delivered`);
        assert.equal(live.status, dry.refusal.status, f.name);
        assert.equal(live.body.code, dry.refusal.code, f.name);
        kinds.push('refusal');
        continue;
      }
      assert.ok(dry.plan, f.name);
      kinds.push(dry.plan.kind);
      if (dry.plan.kind === 'handshake') {
        assert.equal(plans.length, 0, `${f.name}: a handshake acts on nothing`);
        assert.deepEqual(live.body, dry.plan.answer, f.name);
        continue;
      }
      assert.equal(plans.length, 1, f.name);
      assert.deepEqual(comparable(plans[0]!, f.headers), comparable(dry.plan, f.headers), f.name);
      assert.equal(live.status, dry.answer!.status, f.name);
    }
    // Every kind of plan was compared, and both refusals.
    assert.deepEqual(kinds, ['endpoint', 'endpoint', 'mapped', 'mapped', 'each', 'handshake', 'refusal', 'refusal']);
  });
});

test('the plan carries the keys: the header for an endpoint, the delivery id for GitHub, one per forEach item', async (t) => {
  await withGateway({ hooks }, async (gw) => {
    const [wake, , , github, alerts] = await fixtures();
    const plans = [];
    for (const f of [wake!, github!, alerts!]) plans.push((await both(t, gw, f)).plans[0]!);
    const [p1, p2, p3] = plans;
    assert.ok(p1?.kind === 'endpoint' && p2?.kind === 'mapped' && p3?.kind === 'each');
    assert.deepEqual(p1.key, { scope: 'wake', key: 'wake-plan-1' });
    assert.deepEqual(p2.key, { scope: 'mapping:github', key: 'plan-delivery-1' });
    assert.equal(p3.scope, 'mapping:alerts');
    assert.deepEqual(
      p3.items.map((i) => i.key),
      ['a1', 'a2'],
    );
  });
});

test('the key known before the body is the key the plan picks, or none', async (t) => {
  await withGateway({ hooks }, async (gw) => {
    const known: string[] = [];
    for (const f of await fixtures()) {
      const { plans } = await both(t, gw, f);
      const name = f.path.split('?')[0]!;
      const early = keyBeforeBody(targetOf(name, gw.plugin.snapshot()), f.headers);
      if (!early) continue;
      known.push(f.name);
      const plan = plans[0];
      if (plan)
        assert.deepEqual(
          early,
          plan.kind === 'each' || plan.kind === 'handshake' || plan.kind === 'ignored' ? undefined : plan.key,
        );
    }
    // The header key of wake and GitHub's delivery id; not a forEach keyed by items, nor Slack's handshake.
    assert.deepEqual(known, [
      'wake',
      'a signed GitHub delivery',
      'a refusal: a GitHub delivery signed with another secret',
    ]);
  });
});
