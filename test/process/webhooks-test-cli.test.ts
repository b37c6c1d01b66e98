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
const CLI = path.join(ROOT, 'plugin', 'hosts', 'standalone', 'cli.ts');
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
