// `hookgate webhooks test` as a real CLI process: a signed GitHub delivery (GitHub's published
// example, signed with GitHub's own signing code) through the example transform, a skipped event, a
// policy refusal and a bad signature; and proof that none of it left anything in the state dir.
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sign } from '@octokit/webhooks-methods';
import published from '@octokit/webhooks-examples';
import { tempStateDir, writeConfig } from '../helpers/spawn-gateway.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = path.join(ROOT, 'plugin', 'hosts', 'standalone', 'cli', 'index.ts');
const SECRET = 'github-secret-for-the-dry-run-0123';

const examples = published as unknown as { name: string; examples: Record<string, unknown>[] }[];
const example = (name: string, action?: string): Record<string, unknown> =>
  examples.find((e) => e.name === name)!.examples.find((x) => action === undefined || x.action === action)!;

let stateDir: string;
let files: Record<string, string>;

function cli(args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', CLI, ...args, '--state-dir', stateDir],
      { cwd: ROOT },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
    );
  });
}

/** Every path under the state dir with its size and modification time. */
async function listing(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { recursive: true })) {
    const s = await stat(path.join(dir, entry));
    out.push(`${entry} ${s.size} ${s.mtimeMs}`);
  }
  return out.sort();
}

before(async () => {
  stateDir = await tempStateDir();
  await mkdir(path.join(stateDir, 'hooks', 'transforms'), { recursive: true });
  await writeFile(
    path.join(stateDir, 'hooks', 'transforms', 'github.ts'),
    await readFile(path.join(ROOT, 'transforms-example', 'github.ts'), 'utf8'),
  );
  await writeConfig(stateDir, {
    hooks: {
      mappings: [
        {
          id: 'github',
          match: { path: 'github' },
          action: 'agent',
          transform: { module: 'github.ts' },
          verify: { scheme: 'github', secret: SECRET },
        },
        // A mapping whose agent the policy refuses.
        { id: 'ops', match: { path: 'ops' }, action: 'agent', agentId: '{{agent}}', messageTemplate: 'ops: {{what}}' },
      ],
      allowedAgentIds: ['main'],
    },
    agents: { list: [{ id: 'main', default: true }, { id: 'ops' }] },
  });
  files = {};
  const push = JSON.stringify(example('push'));
  files.push = path.join(stateDir, 'push.json');
  await writeFile(files.push, push);
  files.pushSignature = await sign(SECRET, push);
  const ping = JSON.stringify(example('ping'));
  files.ping = path.join(stateDir, 'ping.json');
  await writeFile(files.ping, ping);
  files.pingSignature = await sign(SECRET, ping);
  files.ops = path.join(stateDir, 'ops.json');
  await writeFile(files.ops, JSON.stringify({ agent: 'ops', what: 'disk full' }));
});

test('a signed GitHub push: mapping, valid signature, transform output, run with policies, dedupe key', async () => {
  const before = await listing(stateDir);
  const { code, out } = await cli([
    'webhooks',
    'test',
    'github',
    '--payload',
    files.push!,
    '--header',
    `x-hub-signature-256:${files.pushSignature}`,
    '--header',
    'x-github-event:push',
    '--header',
    'x-github-delivery:3f1a-delivery-77',
  ]);
  assert.equal(code, 0, out);
  assert.match(out, /^target\s+hooks\.mappings\[0\] \(id "github"\)$/m);
  assert.match(out, /^verification\s+github signature: valid$/m);
  assert.match(out, /^transform\s+\{/m);
  assert.match(out, /"name": "GitHub"/);
  assert.match(out, /^agent runs$/m);
  assert.match(out, /GitHub\s+main\s+agent:main:hook:/);
  assert.match(out, /<<<EXTERNAL_UNTRUSTED_CONTENT|EXTERNAL/);
  assert.match(out, /^dedupe key\s+mapping:github 3f1a-delivery-77$/m);
  assert.match(out, /^answer\s+202 /m);
  assert.doesNotMatch(out, new RegExp(files.pushSignature!.slice(7, 30)), 'the signature is never printed');
  assert.deepEqual(await listing(stateDir), before, 'nothing written: no sessions, runs, outbox or dedupe state');
});

test('a ping the transform skips: 204, still no effect', async () => {
  const before = await listing(stateDir);
  const { code, out } = await cli([
    'webhooks',
    'test',
    'github',
    '--payload',
    files.ping!,
    '--header',
    `x-hub-signature-256:${files.pingSignature}`,
    '--header',
    'x-github-event:ping',
  ]);
  assert.equal(code, 0, out);
  assert.match(out, /^transform\s+returned null: the request is skipped \(204\)$/m);
  assert.match(out, /^answer\s+204$/m);
  assert.deepEqual(await listing(stateDir), before);
});

test('a policy refusal: exit 1 and the code', async () => {
  const { code, out } = await cli(['webhooks', 'test', 'ops', '--payload', files.ops!]);
  assert.equal(code, 1, out);
  assert.match(out, /^refused\s+400 agent_not_allowed: agent "ops" is not in hooks\.allowedAgentIds$/m);
  assert.match(out, /^verification\s+hook token \(not checked by the dry run\)$/m);
});

test('a bad signature: exit 1 and signature_invalid, no transform run', async () => {
  const before = await listing(stateDir);
  const wrong = await sign('not-the-secret', await readFile(files.push!, 'utf8'));
  const { code, out } = await cli([
    'webhooks',
    'test',
    'github',
    '--payload',
    files.push!,
    '--header',
    `x-hub-signature-256:${wrong}`,
    '--header',
    'x-github-event:push',
  ]);
  assert.equal(code, 1, out);
  assert.match(out, /^verification\s+github signature: invalid$/m);
  assert.match(out, /^refused\s+401 signature_invalid: /m);
  assert.doesNotMatch(out, /^transform/m);
  assert.deepEqual(await listing(stateDir), before);
});

test('a name no mapping owns, and usage mistakes', async () => {
  const unknown = await cli(['webhooks', 'test', 'nothing-here', '--payload', files.ops!]);
  assert.equal(unknown.code, 1);
  assert.match(unknown.out, /^refused\s+404 not_found: /m);
  const noPayload = await cli(['webhooks', 'test', 'github']);
  assert.equal(noPayload.code, 2);
  assert.match(noPayload.out, /--payload FILE/);
  const badHeader = await cli(['webhooks', 'test', 'github', '--payload', files.ops!, '--header', 'no-colon']);
  assert.equal(badHeader.code, 2);
});

test('the rendered text is shown in full, the wrapper once; --json gives the same for scripts', async () => {
  const dir = await tempStateDir();
  const config = path.join(dir, 'notes.json5');
  await writeFile(
    config,
    JSON.stringify({
      gateway: { auth: { token: 'gateway-token-for-notes-0123' } },
      hooks: {
        enabled: true,
        token: 'hook-token-for-notes-0123456',
        mappings: [{ id: 'notes', match: { path: 'notes' }, action: 'wake', textTemplate: 'Note: {{note}} (end)' }],
      },
    }),
  );
  const note = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');
  const payload = path.join(dir, 'note.json');
  await writeFile(payload, JSON.stringify({ note }));
  const { code, out } = await cli(['webhooks', 'test', 'notes', '--payload', payload, '--config', config]);
  assert.equal(code, 0, out);
  assert.match(out, /^text of wake event 1 \(notes\), inside the wrapper:$/m);
  assert.ok(out.includes(`\nNote: ${note} (end)\n`), out);
  assert.equal(out.split('<<<EXTERNAL_UNTRUSTED_CONTENT').length, 2, 'the wrapper is shown once');
  assert.equal(out.split('<<<END_EXTERNAL_UNTRUSTED_CONTENT').length, 2);

  const asJson = await cli(['webhooks', 'test', 'notes', '--payload', payload, '--config', config, '--json']);
  assert.equal(asJson.code, 0, asJson.out);
  const result = JSON.parse(asJson.out);
  assert.equal(result.target, 'hooks.mappings[0] (id "notes")');
  assert.equal(result.wakes[0].content, `Note: ${note} (end)`);
  assert.match(result.wakes[0].text, /^<<<EXTERNAL_UNTRUSTED_CONTENT id="[0-9a-f]{24}">>>\n[^]*\nNote: word0 /);
  assert.deepEqual(result.answer, { status: 200, body: { ok: true, mode: 'now' } });
  assert.equal(result.refusal, null);
});

test('a mapping whose variable is unset fails its own dry run, naming the variable; the others still run', async () => {
  const dir = await tempStateDir();
  const config = path.join(dir, 'partial.json5');
  await writeFile(
    config,
    JSON.stringify({
      gateway: { auth: { token: 'gateway-token-for-partial-01' } },
      hooks: {
        enabled: true,
        token: 'hook-token-for-partial-012345',
        mappings: [
          {
            id: 'stripe',
            match: { path: 'stripe' },
            action: 'wake',
            textTemplate: 'Stripe {{type}}',
            verify: { scheme: 'stripe', secret: '${HOOKGATE_TEST_UNSET_STRIPE_SECRET}' },
          },
          { id: 'ci', match: { path: 'ci' }, action: 'wake', textTemplate: 'CI {{status}}' },
        ],
      },
    }),
  );
  const payload = path.join(dir, 'ci.json');
  await writeFile(payload, JSON.stringify({ status: 'green', type: 'invoice.paid' }));
  const ci = await cli(['webhooks', 'test', 'ci', '--payload', payload, '--config', config]);
  assert.equal(ci.code, 0, ci.out);
  assert.match(ci.out, /^target\s+hooks\.mappings\[1\] \(id "ci"\)$/m);
  assert.ok(ci.out.includes('\nCI green\n'), ci.out);

  const stripe = await cli(['webhooks', 'test', 'stripe', '--payload', payload, '--config', config]);
  assert.equal(stripe.code, 1, stripe.out);
  assert.match(
    stripe.out,
    /^unavailable\s+hooks\.mappings\[0\] \(id "stripe"\)\.verify\.secret: environment variable HOOKGATE_TEST_UNSET_STRIPE_SECRET is not set$/m,
  );
  const asJson = JSON.parse(
    (await cli(['webhooks', 'test', 'stripe', '--payload', payload, '--config', config, '--json'])).out,
  );
  assert.match(asJson.unavailable[0], /HOOKGATE_TEST_UNSET_STRIPE_SECRET is not set/);
});
