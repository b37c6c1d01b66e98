// The example transforms in transforms-example/ run as shipped: each file is copied into the test
// gateway's transforms dir, mapped, and fed sample payloads shaped like the real senders' (GitHub
// repository webhooks, Stripe events, Alertmanager webhook v4), trimmed to the fields that matter.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { HOOK_TOKEN, post, startTestGateway, type TestGateway } from '../helpers/recording-host.ts';

const EXAMPLES = new URL('../../transforms-example/', import.meta.url);
const T = 'hooks/transforms';

async function exampleFiles(): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const name of ['github.ts', 'stripe.js', 'alertmanager.ts']) {
    files[`${T}/${name}`] = await readFile(new URL(name, EXAMPLES), 'utf8');
  }
  return files;
}

let gw: TestGateway;

before(async () => {
  gw = await startTestGateway({
    files: await exampleFiles(),
    channels: ['telegram', 'slack'],
    lastRoute: { channel: 'slack', to: '#ops' },
    hooks: {
      // GitHub push payloads can be large (up to 2048 commits listed); the examples README suggests this.
      mappings: [
        {
          id: 'github',
          match: { path: 'github' },
          action: 'agent',
          deliver: false,
          maxBodyBytes: 5 * 1024 * 1024,
          transform: { module: 'github.ts' },
        },
        { id: 'stripe', match: { path: 'stripe' }, action: 'wake', transform: { module: 'stripe.js' } },
        // As the examples README gives it: deliver left to its default (true).
        {
          id: 'alertmanager',
          match: { path: 'alertmanager' },
          action: 'agent',
          transform: { module: 'alertmanager.ts' },
        },
        // An example never overrides the mapping's deliver: false.
        {
          id: 'alertmanager-quiet',
          match: { path: 'alertmanager-quiet' },
          action: 'agent',
          deliver: false,
          transform: { module: 'alertmanager.ts' },
        },
      ],
    },
  });
});

after(async () => {
  await gw?.close();
});

/** Posts to an agent mapping, expects 202, waits for the run; returns its prompt and deliveries. */
async function agentRun(path: string, body: unknown, headers: Record<string, string> = {}) {
  const r = await post(gw.url, path, body, { headers });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const runId = r.body.runId as string;
  const final = await gw.finalRun(runId);
  assert.equal(final.status, 'ok', final.error);
  const turn = gw.rec.turns.find((t) => t.runId === runId);
  assert.ok(turn, 'the run reached the agent');
  assert.match(
    turn.prompt,
    /^<<<EXTERNAL_UNTRUSTED_CONTENT id="[0-9a-f]+">>>/,
    'the prompt is wrapped as untrusted content',
  );
  return { runId, prompt: turn.prompt, deliveries: gw.rec.deliveries.filter((d) => d.runId === runId) };
}

/** POST that must be skipped by the transform: 204, empty body, nothing recorded. */
async function expectSkipped(path: string, body: unknown, headers: Record<string, string> = {}) {
  const counts = [gw.rec.turns.length, gw.rec.events.length, gw.rec.runUpdates.length];
  const res = await fetch(gw.url + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 204);
  assert.equal(await res.text(), '');
  assert.deepEqual([gw.rec.turns.length, gw.rec.events.length, gw.rec.runUpdates.length], counts);
}

// ---------------------------------------------------------------------------------------------------
// GitHub (repository webhook, content type application/json; the event name is in X-GitHub-Event)

const ghHeaders = (event: string): Record<string, string> => ({
  'x-github-event': event,
  'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958',
  'x-github-hook-id': '109948940',
  'x-hub-signature-256': 'sha256=d57c68ca6f92289e6987922ff26938930f6e66a2d161ef06abdf1859230aa23c',
  'user-agent': 'GitHub-Hookshot/044aadd',
});

const repository = {
  id: 186853002,
  node_id: 'MDEwOlJlcG9zaXRvcnkxODY4NTMwMDI=',
  name: 'Hello-World',
  full_name: 'Codertocat/Hello-World',
  private: false,
  owner: { login: 'Codertocat', id: 21031067, type: 'User' },
  html_url: 'https://github.com/Codertocat/Hello-World',
  default_branch: 'main',
};
const codertocat = {
  login: 'Codertocat',
  id: 21031067,
  node_id: 'MDQ6VXNlcjIxMDMxMDY3',
  type: 'User',
  site_admin: false,
};
const octocat = { login: 'octocat', id: 583231, node_id: 'MDQ6VXNlcjU4MzIzMQ==', type: 'User', site_admin: false };

function commit(id: string, message: string) {
  const who = { name: 'Codertocat', email: '21031067+Codertocat@users.noreply.github.com', username: 'Codertocat' };
  return {
    id,
    tree_id: '31b122c26a97cf9af023e9ddab94a82c6e77b0ea',
    distinct: true,
    message,
    timestamp: '2024-05-15T15:19:25Z',
    url: `https://github.com/Codertocat/Hello-World/commit/${id}`,
    author: who,
    committer: who,
    added: [],
    removed: [],
    modified: ['README.md'],
  };
}

const pushPayload = {
  ref: 'refs/heads/main',
  before: '6113728f27ae82c7b1a177c8d03f9e96e0adf246',
  after: 'a10867b14bb761a232cd80139fbd4c0d33264240',
  repository,
  pusher: { name: 'Codertocat', email: '21031067+Codertocat@users.noreply.github.com' },
  sender: codertocat,
  created: false,
  deleted: false,
  forced: false,
  base_ref: null,
  compare: 'https://github.com/Codertocat/Hello-World/compare/6113728f27ae...a10867b14bb7',
  commits: [
    commit('0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c', 'Fix typo in README'),
    commit('9049f1265b7d61be4a8904a9a27120d2064dab3b', 'Add install section'),
    commit(
      'a10867b14bb761a232cd80139fbd4c0d33264240',
      'Describe the release process\n\nLonger body that the message should not include.',
    ),
  ],
  head_commit: commit(
    'a10867b14bb761a232cd80139fbd4c0d33264240',
    'Describe the release process\n\nLonger body that the message should not include.',
  ),
};

function pullRequestPayload(action: string, extra: Record<string, unknown> = {}, sender = codertocat) {
  return {
    action,
    number: 2,
    pull_request: {
      url: 'https://api.github.com/repos/Codertocat/Hello-World/pulls/2',
      id: 279147437,
      html_url: 'https://github.com/Codertocat/Hello-World/pull/2',
      number: 2,
      state: action === 'closed' ? 'closed' : 'open',
      locked: false,
      title: 'Update the README with new information.',
      user: codertocat,
      body: 'This is a pretty simple change that we need to pull into main.',
      draft: false,
      merged: false,
      head: { label: 'Codertocat:changes', ref: 'changes', sha: 'ec26c3e57ca3a959ca5aad62de7213c562f8c821' },
      base: { label: 'Codertocat:main', ref: 'main', sha: 'f95f852bd8fca8fcc58a9a2d6c842781e32a215e' },
      ...extra,
    },
    repository,
    sender,
  };
}

describe('github.ts', () => {
  test('push: repo, pusher, branch, commit count, latest commit (first line) and the compare URL', async () => {
    const { prompt, deliveries } = await agentRun('/hooks/github', pushPayload, ghHeaders('push'));
    assert.ok(
      prompt.includes('GitHub push to Codertocat/Hello-World by Codertocat: 3 commits to branch main.'),
      prompt,
    );
    assert.ok(prompt.includes('Latest commit: Describe the release process'));
    assert.ok(!prompt.includes('Longer body'));
    assert.ok(
      prompt.includes('Compare: https://github.com/Codertocat/Hello-World/compare/6113728f27ae...a10867b14bb7'),
    );
    assert.deepEqual(deliveries, [], 'the mapping says deliver: false');
    assert.ok(gw.rec.events.some((e) => e.meta.hook === 'GitHub' && e.text.startsWith('Hook GitHub: ')));
  });

  test('push of a new tag and of a deleted branch', async () => {
    const tag = await agentRun(
      '/hooks/github',
      { ...pushPayload, ref: 'refs/tags/v1.2.0', created: true, base_ref: 'refs/heads/main', commits: [] },
      ghHeaders('push'),
    );
    assert.ok(tag.prompt.includes('created tag v1.2.0 with 0 commits'), tag.prompt);
    const deleted = await agentRun(
      '/hooks/github',
      {
        ...pushPayload,
        ref: 'refs/heads/old-feature',
        after: '0'.repeat(40),
        deleted: true,
        commits: [],
        head_commit: null,
      },
      ghHeaders('push'),
    );
    assert.ok(deleted.prompt.includes('by Codertocat: deleted branch old-feature.'), deleted.prompt);
    assert.ok(!deleted.prompt.includes('Latest commit'));
  });

  test('pull_request: action, number, title, author and link; closed + merged reads "merged"', async () => {
    const opened = await agentRun('/hooks/github', pullRequestPayload('opened'), ghHeaders('pull_request'));
    assert.ok(opened.prompt.includes('GitHub pull request #2 opened in Codertocat/Hello-World\n'), opened.prompt);
    assert.ok(opened.prompt.includes('Title: Update the README with new information.'));
    assert.ok(opened.prompt.includes('Author: Codertocat'));
    assert.ok(opened.prompt.includes('Link: https://github.com/Codertocat/Hello-World/pull/2'));

    const merged = await agentRun(
      '/hooks/github',
      pullRequestPayload('closed', { merged: true, merged_at: '2024-05-16T09:00:00Z' }, octocat),
      ghHeaders('pull_request'),
    );
    assert.ok(
      merged.prompt.includes('GitHub pull request #2 merged in Codertocat/Hello-World (merged by octocat)'),
      merged.prompt,
    );
    assert.ok(merged.prompt.includes('Author: Codertocat'));
  });

  test('issues: action, number, title, author and link; long titles are clipped', async () => {
    const longTitle = `Spurious 502s from the ingress ${'x'.repeat(400)}`;
    const { prompt } = await agentRun(
      '/hooks/github',
      {
        action: 'opened',
        issue: {
          url: 'https://api.github.com/repos/Codertocat/Hello-World/issues/1',
          html_url: 'https://github.com/Codertocat/Hello-World/issues/1',
          id: 444500041,
          number: 1,
          title: longTitle,
          user: octocat,
          labels: [{ name: 'bug', color: 'd73a4a', default: true }],
          state: 'open',
          body: "It looks like you accidently spelled 'commit' with two 't's.",
        },
        repository,
        sender: octocat,
      },
      ghHeaders('issues'),
    );
    assert.ok(prompt.includes('GitHub issue #1 opened in Codertocat/Hello-World\n'), prompt);
    assert.ok(prompt.includes('Author: octocat'));
    assert.ok(prompt.includes('Link: https://github.com/Codertocat/Hello-World/issues/1'));
    const title = prompt.split('\n').find((l) => l.startsWith('Title: '))!;
    assert.ok(title.endsWith('…'));
    assert.equal(title.length, 'Title: '.length + 200);
  });

  test('ping is skipped (204); other events get a one-line message', async () => {
    await expectSkipped(
      '/hooks/github',
      {
        zen: 'Anything added dilutes everything else.',
        hook_id: 109948940,
        hook: {
          type: 'Repository',
          id: 109948940,
          name: 'web',
          active: true,
          events: ['push'],
          config: { content_type: 'json', insecure_ssl: '0', url: 'https://example.com/hooks/github' },
        },
        repository,
        sender: codertocat,
      },
      ghHeaders('ping'),
    );
    const { prompt } = await agentRun(
      '/hooks/github',
      { action: 'created', starred_at: '2024-05-15T15:20:40Z', repository, sender: octocat },
      ghHeaders('star'),
    );
    assert.ok(prompt.includes('GitHub event star (created) on Codertocat/Hello-World by octocat.'), prompt);
  });

  test('partial payloads never throw: every missing field reads "unknown"', async () => {
    const push = await agentRun('/hooks/github', {}, ghHeaders('push'));
    assert.ok(
      push.prompt.includes('GitHub push to unknown by unknown: unknown commits to branch unknown.'),
      push.prompt,
    );
    assert.ok(push.prompt.includes('Compare: unknown'));
    const pr = await agentRun(
      '/hooks/github',
      { action: 'opened', pull_request: null, repository: 'not an object' },
      ghHeaders('pull_request'),
    );
    assert.ok(pr.prompt.includes('GitHub pull request #unknown opened in unknown'), pr.prompt);
    const noHeader = await agentRun('/hooks/github', { commits: [null, 7, 'x'] });
    assert.ok(noHeader.prompt.includes('GitHub event unknown on unknown by unknown.'), noHeader.prompt);
  });
});

// ---------------------------------------------------------------------------------------------------
// Stripe (Event objects: { id, object: "event", type, data: { object } })

function stripeEvent(type: string, object: Record<string, unknown>, livemode = true) {
  return {
    id: 'evt_1NG8Du2eZvKYlo2CUI79vXWy',
    object: 'event',
    api_version: '2024-06-20',
    created: 1686089970,
    data: { object },
    livemode,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type,
  };
}

function invoice(extra: Record<string, unknown>) {
  return {
    id: 'in_1MtHbELkdIwHu7ixl4OzzPMv',
    object: 'invoice',
    account_country: 'US',
    account_name: 'Stripe Docs',
    amount_due: 1250,
    amount_paid: 1250,
    amount_remaining: 0,
    attempt_count: 1,
    attempted: true,
    billing_reason: 'subscription_cycle',
    collection_method: 'charge_automatically',
    currency: 'usd',
    customer: 'cus_NeZwdNtLEOXuvB',
    customer_email: 'jennyrosen@example.com',
    customer_name: 'Jenny Rosen',
    hosted_invoice_url: 'https://invoice.stripe.com/i/acct_1M2JTkLkdIwHu7ix/test_YWNjdF8xTTJKVGtMa2RJd0h1N2l4',
    number: 'EE1DF78D-0001',
    paid: true,
    status: 'paid',
    subscription: 'sub_1MowQVLkdIwHu7ixeRlqHVzs',
    total: 1250,
    ...extra,
  };
}

function paymentIntent(extra: Record<string, unknown>) {
  return {
    id: 'pi_3MtwBwLkdIwHu7ix28a3tqPa',
    object: 'payment_intent',
    amount: 2000,
    amount_capturable: 0,
    amount_received: 2000,
    capture_method: 'automatic',
    currency: 'eur',
    customer: null,
    description: 'Order #1042',
    last_payment_error: null,
    payment_method_types: ['card'],
    receipt_email: null,
    status: 'succeeded',
    ...extra,
  };
}

/** POSTs a Stripe event, expects 200 { ok, mode: 'now' }, returns the wake event's text. */
async function stripeWake(body: unknown): Promise<string> {
  const r = await post(gw.url, '/hooks/stripe', body, {
    headers: {
      'stripe-signature': 't=1686089970,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd',
      'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
    },
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.deepEqual(r.body, { ok: true, mode: 'now' });
  const event = gw.rec.events.at(-1)!;
  assert.equal(event.meta.hook, 'Stripe');
  assert.equal(event.sessionKey, 'agent:main:main');
  assert.match(event.text, /^<<<EXTERNAL_UNTRUSTED_CONTENT id="[0-9a-f]+">>>/);
  return event.text;
}

describe('stripe.js', () => {
  test('invoice.paid: type, customer email, amount in major units, invoice number', async () => {
    const heartbeats = gw.rec.heartbeats.length;
    const text = await stripeWake(stripeEvent('invoice.paid', invoice({})));
    assert.ok(
      text.includes(
        'Stripe invoice.paid: customer jennyrosen@example.com, paid 12.50 USD, invoice EE1DF78D-0001, https://invoice.stripe.com/i/',
      ),
      text,
    );
    assert.ok(text.includes('(event evt_1NG8Du2eZvKYlo2CUI79vXWy)'));
    assert.equal(gw.rec.heartbeats.length, heartbeats + 1, 'wakeMode now requests a heartbeat');
  });

  test('invoice.payment_failed in JPY (zero-decimal) without an email falls back to the customer id', async () => {
    const text = await stripeWake(
      stripeEvent(
        'invoice.payment_failed',
        invoice({
          currency: 'jpy',
          amount_due: 1200,
          amount_paid: 0,
          amount_remaining: 1200,
          attempt_count: 2,
          customer_email: null,
          paid: false,
          status: 'open',
        }),
        false,
      ),
    );
    assert.ok(
      text.includes(
        'Stripe invoice.payment_failed [test mode]: customer cus_NeZwdNtLEOXuvB, due 1200 JPY, invoice EE1DF78D-0001, attempt 2',
      ),
      text,
    );
  });

  test('payment_intent.succeeded and payment_failed: amount, receipt email or card email, failure reason', async () => {
    const ok = await stripeWake(
      stripeEvent('payment_intent.succeeded', paymentIntent({ receipt_email: 'ada@example.com' })),
    );
    assert.ok(
      ok.includes(
        'Stripe payment_intent.succeeded: customer ada@example.com, 20.00 EUR, payment pi_3MtwBwLkdIwHu7ix28a3tqPa',
      ),
      ok,
    );

    const failed = await stripeWake(
      stripeEvent(
        'payment_intent.payment_failed',
        paymentIntent({
          amount: 500000,
          amount_received: 0,
          currency: 'krw',
          customer: 'cus_NffrFeUfNV2Hib',
          status: 'requires_payment_method',
          last_payment_error: {
            charge: 'ch_3MtwBwLkdIwHu7ix0dD1aaSY',
            code: 'card_declined',
            decline_code: 'insufficient_funds',
            doc_url: 'https://stripe.com/docs/error-codes/card-declined',
            message: 'Your card has insufficient funds.',
            payment_method: {
              id: 'pm_1MtwBwLkdIwHu7ixMoDQ1jVx',
              object: 'payment_method',
              billing_details: { email: 'min-jun@example.com', name: 'Kim Min-jun' },
              type: 'card',
            },
            type: 'card_error',
          },
        }),
      ),
    );
    assert.ok(
      failed.includes(
        'Stripe payment_intent.payment_failed: customer min-jun@example.com, 500000 KRW, payment pi_3MtwBwLkdIwHu7ix28a3tqPa, reason: Your card has insufficient funds.',
      ),
      failed,
    );
  });

  test('charge.refunded: refunded and total amounts, customer email from billing details', async () => {
    const text = await stripeWake(
      stripeEvent('charge.refunded', {
        id: 'ch_3MmlLrLkdIwHu7ix0snN0B15',
        object: 'charge',
        amount: 1099,
        amount_captured: 1099,
        amount_refunded: 500,
        billing_details: {
          address: { country: 'GB', postal_code: 'SW1A 1AA' },
          email: 'grace@example.co.uk',
          name: 'Grace Hopper',
          phone: null,
        },
        captured: true,
        currency: 'gbp',
        customer: 'cus_NffrFeUfNV2Hib',
        paid: true,
        payment_intent: 'pi_3MmlLrLkdIwHu7ix0uke3Ezy',
        receipt_email: null,
        refunded: false,
        status: 'succeeded',
      }),
    );
    assert.ok(
      text.includes(
        'Stripe charge.refunded: customer grace@example.co.uk, refunded 5.00 GBP of 10.99 GBP, payment pi_3MmlLrLkdIwHu7ix0uke3Ezy',
      ),
      text,
    );
  });

  test('unknown event types are skipped (204); a partial event never throws', async () => {
    await expectSkipped(
      '/hooks/stripe',
      stripeEvent('customer.created', { id: 'cus_NffrFeUfNV2Hib', object: 'customer', email: 'a@example.com' }),
    );
    await expectSkipped('/hooks/stripe', {});
    const text = await stripeWake({ type: 'invoice.paid' });
    assert.ok(
      text.includes('Stripe invoice.paid: customer unknown, paid unknown amount, invoice unknown (event unknown)'),
      text,
    );
    const noData = await stripeWake({ type: 'charge.refunded', data: { object: null } });
    assert.ok(noData.includes('customer unknown, refunded unknown amount of unknown amount, payment unknown'), noData);
  });
});

// ---------------------------------------------------------------------------------------------------
// Alertmanager (webhook_config payload, version 4)

function alert(status: 'firing' | 'resolved', alertname: string, instance: string, severity: string, summary: string) {
  return {
    status,
    labels: { alertname, instance, job: 'api', severity, team: 'platform' },
    annotations: {
      summary,
      description: `${summary} on ${instance}.`,
      runbook_url: 'https://runbooks.example.com/latency',
    },
    startsAt: '2024-05-15T09:51:03.157Z',
    endsAt: status === 'resolved' ? '2024-05-15T10:06:03.157Z' : '0001-01-01T00:00:00Z',
    generatorURL:
      'http://prometheus.example.com:9090/graph?g0.expr=job%3Aapi_request_latency_seconds%3Amean5m+%3E+0.5&g0.tab=1',
    fingerprint: '1a30ba71cca2921f',
  };
}

function notification(alerts: unknown[], status = 'firing') {
  return {
    version: '4',
    groupKey: '{}/{severity=~"critical|warning"}:{alertname="HighRequestLatency"}',
    truncatedAlerts: 0,
    status,
    receiver: 'hookgate',
    groupLabels: { alertname: 'HighRequestLatency' },
    commonLabels: { alertname: 'HighRequestLatency', job: 'api', team: 'platform' },
    commonAnnotations: { runbook_url: 'https://runbooks.example.com/latency' },
    externalURL: 'http://alertmanager.example.com:9093',
    alerts,
  };
}

describe('alertmanager.ts', () => {
  test('a firing + resolved batch: both states, counts, each alert, and the reply is delivered', async () => {
    const { prompt, deliveries, runId } = await agentRun(
      '/hooks/alertmanager',
      notification([
        alert('firing', 'HighRequestLatency', 'api-1:9090', 'critical', 'p99 latency above 500ms'),
        alert('firing', 'HighRequestLatency', 'api-2:9090', 'warning', 'p99 latency above 300ms'),
        alert('resolved', 'HighRequestLatency', 'api-3:9090', 'critical', 'p99 latency above 500ms'),
      ]),
      { 'user-agent': 'Alertmanager/0.27.0' },
    );
    assert.ok(prompt.includes('Alertmanager notification: group FIRING — 2 firing, 1 resolved\n'), prompt);
    assert.ok(prompt.includes('Group: alertname=HighRequestLatency (receiver hookgate)'));
    assert.ok(
      prompt.includes(
        '- [FIRING] HighRequestLatency severity=critical instance=api-1:9090: p99 latency above 500ms (since 2024-05-15T09:51:03.157Z)',
      ),
    );
    assert.ok(
      prompt.includes('- [FIRING] HighRequestLatency severity=warning instance=api-2:9090: p99 latency above 300ms'),
    );
    assert.ok(
      prompt.includes(
        '- [RESOLVED] HighRequestLatency severity=critical instance=api-3:9090: p99 latency above 500ms (ended 2024-05-15T10:06:03.157Z)',
      ),
    );
    assert.ok(prompt.includes('Alertmanager: http://alertmanager.example.com:9093'));
    assert.equal(deliveries.length, 1, 'the mapping delivers by default');
    assert.equal(deliveries[0]!.channel, 'slack');
    assert.equal(deliveries[0]!.to, '#ops');
    assert.equal(deliveries[0]!.runId, runId);
  });

  test("a mapping's deliver: false is kept: the transform does not override it", async () => {
    const { deliveries } = await agentRun(
      '/hooks/alertmanager-quiet',
      notification([alert('firing', 'HighRequestLatency', 'api-1:9090', 'critical', 'p99 latency above 500ms')]),
    );
    assert.deepEqual(deliveries, []);
  });

  test('more than 20 alerts: 20 listed, "…and N more"; description used when summary is missing', async () => {
    const alerts = Array.from({ length: 25 }, (_, i) =>
      alert('firing', 'InstanceDown', `node-${i}:9100`, 'critical', 'down'),
    );
    const first = alerts[0]!;
    first.annotations = { description: 'node-0 has been down for more than 5 minutes.' } as typeof first.annotations;
    const { prompt } = await agentRun('/hooks/alertmanager', {
      ...notification(alerts),
      groupLabels: { alertname: 'InstanceDown' },
      truncatedAlerts: 4,
    });
    assert.ok(
      prompt.includes("group FIRING — 25 firing, 0 resolved (4 more left out by Alertmanager's max_alerts)"),
      prompt,
    );
    assert.equal(prompt.split('\n').filter((l) => l.startsWith('- [FIRING] InstanceDown')).length, 20);
    assert.ok(prompt.includes('instance=node-19:9100'));
    assert.ok(!prompt.includes('instance=node-20:9100'));
    assert.ok(prompt.includes('\n…and 5 more\n'));
    assert.ok(prompt.includes('instance=node-0:9100: node-0 has been down for more than 5 minutes.'));
  });

  test('all resolved, and a partial payload, never throw', async () => {
    const resolved = await agentRun(
      '/hooks/alertmanager',
      notification([alert('resolved', 'DiskFull', 'db-1:9100', 'warning', 'disk 95% full')], 'resolved'),
    );
    assert.ok(resolved.prompt.includes('group RESOLVED — 0 firing, 1 resolved'), resolved.prompt);
    const empty = await agentRun('/hooks/alertmanager', {});
    assert.ok(empty.prompt.includes('group UNKNOWN — 0 firing, 0 resolved'), empty.prompt);
    assert.ok(empty.prompt.includes('Alertmanager: unknown'));
    const odd = await agentRun('/hooks/alertmanager', {
      alerts: [null, { labels: 'x', annotations: [] }],
      status: 'firing',
    });
    assert.ok(odd.prompt.includes('- [UNKNOWN] unknown severity=unknown instance=unknown: unknown'), odd.prompt);
    assert.equal(odd.deliveries.length, 1);
  });
});
