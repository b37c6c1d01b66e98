// Every example event GitHub publishes (@octokit/webhooks-examples), serialised and signed with
// GitHub's own signing code, through the example GitHub transform behind a verify: github mapping.
// Each one must be taken (202 for a run, 204 for the events the transform skips), never refused.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { sign } from '@octokit/webhooks-methods';
import published from '@octokit/webhooks-examples';
import { post, startTestGateway, type TestGateway } from '../helpers/recording-host.ts';

/** Its types name a package it does not install; the shape used here is plain. */
const examples = published as unknown as { name: string; examples: unknown[] }[];
const SECRET = 'github-webhook-secret-for-examples';
let gw: TestGateway;

before(async () => {
  gw = await startTestGateway({
    files: {
      'hooks/transforms/github.ts': await readFile(
        new URL('../../transforms-example/github.ts', import.meta.url),
        'utf8',
      ),
    },
    hooks: {
      maxQueuedRuns: 1000,
      mappings: [
        {
          id: 'github',
          match: { path: 'github' },
          action: 'agent',
          deliver: false,
          maxBodyBytes: 5 * 1024 * 1024,
          transform: { module: 'github.ts' },
          verify: { scheme: 'github', secret: SECRET },
        },
      ],
    },
  });
});
after(() => gw.close());

test("every published GitHub example event, signed by GitHub's code, is taken (2xx)", async () => {
  let count = 0;
  const statuses = new Map<number, number>();
  for (const event of examples) {
    for (const [i, example] of event.examples.entries()) {
      const body = JSON.stringify(example);
      const r = await post(gw.url, '/hooks/github', undefined, {
        rawBody: body,
        token: null,
        headers: {
          'x-github-event': event.name,
          'x-github-delivery': `${event.name}-${i}`,
          'x-hub-signature-256': await sign(SECRET, body),
        },
      });
      assert.ok(r.status === 202 || r.status === 204, `${event.name} #${i}: ${r.status} ${JSON.stringify(r.body)}`);
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      count++;
    }
  }
  assert.ok(count > 300, `${count} examples`);
  assert.ok((statuses.get(202) ?? 0) > 250, `runs: ${statuses.get(202)}`);
  // ping is skipped by the transform.
  assert.ok((statuses.get(204) ?? 0) >= 1);
});
