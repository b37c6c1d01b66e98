// `hookgate webhooks gmail setup` as a real CLI process against the fake Google on loopback: the
// "browser" is an HTTP client following the printed consent URL to the CLI's loopback listener.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import JSON5 from 'json5';
import { FakeGoogle } from '../helpers/fake-google.ts';
import { FakeGoogleSetup, serviceDisabled } from '../helpers/fake-google-setup.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = ['--import', 'tsx', path.join(ROOT, 'plugin', 'hosts', 'standalone', 'cli', 'index.ts')];
const ACCOUNT = 'me@example.com';
const PROJECT = 'my-project-123';
const TOPIC = `projects/${PROJECT}/topics/gmail-watch`;
const SUBSCRIPTION = `projects/${PROJECT}/subscriptions/gmail-watch-sub`;
const GMAIL_PUSH = 'serviceAccount:gmail-api-push@system.gserviceaccount.com';
const PUSH_SA = 'pubsub-push@my-project-123.iam.gserviceaccount.com';

const CONFIG = `// my gateway: keep this comment
{
  gateway: {
    port: 18789,
    auth: { token: "gateway-token-0123456789" }, // the admin token
  },
  hooks: {
    enabled: false,
    /* the hook token */
    token: 'hook-token-0123456789',
    presets: [],
  },
  agents: { list: [{ id: "main", default: true }] },
  channels: { slack: { defaultTo: "#hooks" } },
}
`;

let fake: FakeGoogle;
let google: FakeGoogleSetup;
let client: { client_id: string; client_secret: string };

before(async () => {
  fake = await FakeGoogle.start();
  google = new FakeGoogleSetup(fake);
  google.projects.add(PROJECT);
  const { client_id, client_secret } = fake.addAccount('someone-else@example.com');
  client = { client_id, client_secret };
});
after(() => fake.close());

interface Dir {
  dir: string;
  configPath: string;
  secretPath: string;
}

async function freshDir(config = CONFIG): Promise<Dir> {
  const dir = await tempDir('hookgate-gmail-setup-');
  const configPath = path.join(dir, 'gateway.json5');
  await writeFile(configPath, config, { mode: 0o600 });
  const secretPath = path.join(dir, 'client_secret.json');
  await writeFile(
    secretPath,
    JSON.stringify({
      installed: {
        ...client,
        project_id: PROJECT,
        auth_uri: 'https://accounts.google.com/o/oauth2/auth',
        token_uri: 'https://oauth2.googleapis.com/token',
        redirect_uris: ['http://localhost'],
      },
    }),
  );
  return { dir, configPath, secretPath };
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

type Browser = 'follow' | 'paste' | 'none';

/**
 * Runs setup with --no-browser. The "browser": once the consent URL is printed, GET it; with 'follow'
 * follow Google's redirect to the CLI's loopback (after a forged callback with another state, which must
 * not end the wait); with 'paste' type the redirect address into the CLI's stdin instead.
 */
async function setup(d: Dir, args: string[] = [], browser: Browser = 'follow'): Promise<Run> {
  const child = spawn(
    process.execPath,
    [
      ...CLI,
      'webhooks',
      'gmail',
      'setup',
      '--account',
      ACCOUNT,
      '--project',
      PROJECT,
      '--client-secret',
      d.secretPath,
      '--config',
      d.configPath,
      '--state-dir',
      d.dir,
      '--no-browser',
      ...args,
    ],
    {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, HOOKGATE_GOOGLE_API_ROOT: fake.url, DISPLAY: '', WAYLAND_DISPLAY: '' },
    },
  );
  let stdout = '';
  let stderr = '';
  let browsed: Promise<void> | undefined;
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
    const url = /^\s+(http:\/\/127\.0\.0\.1:\d+\/o\/oauth2\/v2\/auth\?\S+)$/m.exec(stderr)?.[1];
    if (url && !browsed && browser !== 'none') browsed = browse(url, browser, (line) => child.stdin.write(line));
  });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  await browsed;
  return { code, stdout, stderr };
}

async function browse(consentUrl: string, how: Browser, type: (line: string) => void): Promise<void> {
  const consent = await fetch(consentUrl, { redirect: 'manual' });
  assert.equal(consent.status, 302, 'the fake consent page redirects back');
  const back = new URL(consent.headers.get('location')!);
  if (how === 'paste') {
    type(`${back.toString()}\n`);
    return;
  }
  const forged = new URL(back);
  forged.searchParams.set('state', 'not-the-state');
  assert.equal((await fetch(forged)).status, 400, 'a callback with another state is refused');
  const done = await fetch(back);
  assert.equal(done.status, 200);
}

function hooksOf(text: string): Record<string, any> {
  return JSON5.parse<{ hooks: Record<string, any> }>(text).hooks;
}

function assertNoSecrets(run: Run, secrets: string[]): void {
  for (const s of secrets) {
    assert.ok(!run.stdout.includes(s) && !run.stderr.includes(s), 'no secret in the output');
  }
  assert.doesNotMatch(run.stdout + run.stderr, /ya29\.|1\/\/fake-refresh|4\/fake-code/);
}

function resetGoogle(): void {
  google.consent = { account: ACCOUNT };
  google.pubsubDisabled = false;
  google.iamDenied = false;
}

test('setup writes the contracted keys keeping comments and other keys; a second run changes nothing', async () => {
  resetGoogle();
  const d = await freshDir();
  const first = await setup(d);
  assert.equal(first.code, 0, first.stderr);
  for (const line of [
    `[1/6] authorization ${ACCOUNT} … authorized (refresh token stored)`,
    `[2/6] topic ${TOPIC} … created`,
    '[3/6] publisher grant to gmail-api-push@system.gserviceaccount.com … granted',
    '[4/6] subscription gmail-watch-sub (pull) … created',
    '[5/6] gmail watch of INBOX … renewed, expires ',
    `[6/6] config ${d.configPath} … written`,
  ])
    assert.ok(first.stderr.includes(line), `progress: ${line}\n${first.stderr}`);

  // The config: exactly the contracted keys, everything else as it was.
  const text = await readFile(d.configPath, 'utf8');
  for (const kept of [
    '// my gateway: keep this comment',
    '// the admin token',
    '/* the hook token */',
    "token: 'hook-token-0123456789'",
  ])
    assert.ok(text.includes(kept), `kept: ${kept}`);
  const hooks = hooksOf(text);
  assert.equal(hooks.enabled, true);
  assert.deepEqual(hooks.presets, ['gmail']);
  assert.deepEqual(hooks.gmail, {
    account: ACCOUNT,
    project: PROJECT,
    topic: 'gmail-watch',
    subscription: 'gmail-watch-sub',
    mode: 'pull',
    label: 'INBOX',
    includeBody: true,
    maxBytes: 20000,
    renewEveryMinutes: 720,
    resyncMessages: 20,
  });
  assert.equal((await stat(d.configPath)).mode & 0o777, 0o600);
  const check = await runCli(['config', 'check', '--config', d.configPath]);
  assert.equal(check.code, 0, check.stderr);

  // Google: the topic, Gmail's grant, a pull subscription on it, a watch of INBOX on the topic.
  assert.ok(google.topics.has(TOPIC));
  assert.deepEqual(google.policy(TOPIC).bindings, [{ role: 'roles/pubsub.publisher', members: [GMAIL_PUSH] }]);
  const sub = fake.subscriptions.get(SUBSCRIPTION)!;
  assert.equal(sub.topic, TOPIC);
  assert.deepEqual(sub.pushConfig, {});
  const watches = fake.mailbox(ACCOUNT).watches;
  assert.deepEqual(
    watches.map((w) => [w.topicName, w.labelIds]),
    [[TOPIC, ['INBOX']]],
  );

  // The consent asked for the two scopes with PKCE S256; the fake checked the verifier on the exchange.
  const auth = fake.calls('GET', /^\/o\/oauth2\/v2\/auth$/).at(-1)!;
  assert.equal(
    auth.query.get('scope'),
    'https://www.googleapis.com/auth/gmail.readonly https://www.googleapis.com/auth/pubsub',
  );
  assert.equal(auth.query.get('code_challenge_method'), 'S256');
  assert.equal(auth.query.get('login_hint'), ACCOUNT);
  assert.equal(google.codeGrants().length, 1);
  assert.match(google.codeGrants()[0]!.body.code_verifier, /^[A-Za-z0-9_-]{43}$/);

  // The credentials: 0600 in a 0700 directory, the refresh token the fake issued, never printed.
  const credFile = path.join(d.dir, 'secrets', `gmail-${ACCOUNT}.json`);
  assert.equal((await stat(credFile)).mode & 0o777, 0o600);
  assert.equal((await stat(path.dirname(credFile))).mode & 0o777, 0o700);
  const cred = JSON.parse(await readFile(credFile, 'utf8'));
  assert.deepEqual(Object.keys(cred).sort(), ['client_id', 'client_secret', 'refresh_token']);
  assert.equal(fake.grants.get(cred.refresh_token)?.account, ACCOUNT);
  assertNoSecrets(first, [cred.refresh_token, client.client_secret]);

  // Second run: no consent, no Pub/Sub write, the config byte for byte the same; only the watch renewed.
  const writes = google.pubsubWrites().length;
  const second = await setup(d, [], 'none');
  assert.equal(second.code, 0, second.stderr);
  assert.equal(await readFile(d.configPath, 'utf8'), text);
  assert.equal(google.pubsubWrites().length, writes, 'no Pub/Sub write call');
  assert.equal(google.codeGrants().length, 1, 'the stored refresh token was reused');
  for (const line of [
    '… reused stored token',
    `[2/6] topic ${TOPIC} … exists`,
    '… already granted',
    '[4/6] subscription gmail-watch-sub (pull) … exists',
    `[6/6] config ${d.configPath} … unchanged`,
  ])
    assert.ok(second.stderr.includes(line), `progress: ${line}\n${second.stderr}`);
  assert.equal(fake.mailbox(ACCOUNT).watches.length, 2);
  assertNoSecrets(second, [cred.refresh_token, client.client_secret]);
});

test('without a config file, setup writes the first-run config with the Gmail keys in it', async () => {
  resetGoogle();
  const d = await freshDir();
  await rm(d.configPath);
  const run = await setup(d, ['--subscription', 'first-run-sub']);
  assert.equal(run.code, 0, run.stderr);
  const text = await readFile(d.configPath, 'utf8');
  assert.match(text, /^\/\/ hookgate gateway config \(JSON5\)/);
  assert.equal(hooksOf(text).gmail.subscription, 'first-run-sub');
  assert.equal((await stat(d.configPath)).mode & 0o777, 0o600);
  assert.equal((await runCli(['config', 'check', '--config', d.configPath])).code, 0);
  assertNoSecrets(run, [hooksOf(text).token]);
});

test('the IAM grant is a read-modify-write: other bindings and members kept, the etag sent back', async () => {
  resetGoogle();
  const topic = `projects/${PROJECT}/topics/shared-topic`;
  google.topics.add(topic);
  const before = {
    version: 1,
    etag: 'etag-before',
    bindings: [
      { role: 'roles/pubsub.subscriber', members: ['user:ops@example.com'] },
      { role: 'roles/pubsub.publisher', members: ['serviceAccount:other@my-project-123.iam.gserviceaccount.com'] },
    ],
  };
  google.policies.set(topic, before);
  const d = await freshDir();
  const run = await setup(d, ['--topic', 'shared-topic', '--subscription', 'shared-sub']);
  assert.equal(run.code, 0, run.stderr);
  assert.ok(run.stderr.includes(`[2/6] topic ${topic} … exists`));
  const set = fake.calls('POST', /shared-topic:setIamPolicy$/);
  assert.equal(set.length, 1);
  assert.equal(set[0]!.body.policy.etag, 'etag-before');
  assert.deepEqual(google.policy(topic).bindings, [
    { role: 'roles/pubsub.subscriber', members: ['user:ops@example.com'] },
    {
      role: 'roles/pubsub.publisher',
      members: ['serviceAccount:other@my-project-123.iam.gserviceaccount.com', GMAIL_PUSH],
    },
  ]);
});

test('a concurrent IAM change (409 ABORTED on the etag) is read again, not overwritten', async () => {
  resetGoogle();
  const topic = `projects/${PROJECT}/topics/busy-topic`;
  google.topics.add(topic);
  fake.failNext(
    'POST',
    /busy-topic:setIamPolicy$/,
    FakeGoogle.error(409, 'ABORTED', 'There were concurrent policy changes.'),
  );
  const d = await freshDir();
  const run = await setup(d, ['--topic', 'busy-topic', '--subscription', 'busy-sub']);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(fake.calls('GET', /busy-topic:getIamPolicy$/).length, 2);
  assert.deepEqual(google.policy(topic).bindings, [{ role: 'roles/pubsub.publisher', members: [GMAIL_PUSH] }]);
});

/** Runs a setup expected to fail: exit 1, the config untouched, the stderr returned. */
async function failingSetup(args: string[] = [], browser: Browser = 'follow'): Promise<string> {
  const d = await freshDir();
  const run = await setup(d, args, browser);
  assert.equal(run.code, 1, run.stderr);
  assert.equal(await readFile(d.configPath, 'utf8'), CONFIG, 'nothing written to the config');
  assert.match(run.stderr, /Setup stopped; the config file was not changed\./);
  assertNoSecrets(run, [client.client_secret]);
  return run.stderr;
}

test('Pub/Sub API disabled: step 2 fails naming SERVICE_DISABLED and the API to enable', async () => {
  resetGoogle();
  google.pubsubDisabled = true;
  const err = await failingSetup(['--topic', 'disabled-topic']);
  assert.match(
    err,
    /\[2\/6\] topic projects\/my-project-123\/topics\/disabled-topic failed: HTTP 403 PERMISSION_DENIED SERVICE_DISABLED: Cloud Pub\/Sub API has not been used/,
  );
  assert.match(
    err,
    /Enable the Cloud Pub\/Sub API in project my-project-123: https:\/\/console\.cloud\.google\.com\/apis\/library\/pubsub\.googleapis\.com\?project=my-project-123/,
  );
});

test('IAM write refused: step 3 fails naming PERMISSION_DENIED and the role needed', async () => {
  resetGoogle();
  google.iamDenied = true;
  const err = await failingSetup(['--topic', 'denied-topic', '--subscription', 'denied-sub']);
  assert.match(
    err,
    /\[3\/6\] publisher grant to gmail-api-push@system\.gserviceaccount\.com failed: HTTP 403 PERMISSION_DENIED: User not authorized/,
  );
  assert.match(err, /roles\/pubsub\.admin/);
  assert.equal(fake.subscriptions.has(`projects/${PROJECT}/subscriptions/denied-sub`), false, 'stopped at step 3');
});

test('wrong project: the 404 says --project takes the project ID', async () => {
  resetGoogle();
  const err = await failingSetup(['--project', 'not-my-project']);
  assert.match(
    err,
    /\[2\/6\] topic projects\/not-my-project\/topics\/gmail-watch failed: HTTP 404 NOT_FOUND: Requested project not found/,
  );
  assert.match(err, /--project takes the project ID/);
});

test('Gmail API disabled: step 1 names the Gmail API; consent refused and the wrong account are refused too', async () => {
  resetGoogle();
  fake.failNext('GET', /\/users\/me\/profile$/, serviceDisabled('gmail.googleapis.com', 'Gmail API'));
  let err = await failingSetup();
  assert.match(
    err,
    /\[1\/6\] gmail profile failed: HTTP 403 PERMISSION_DENIED SERVICE_DISABLED: Gmail API has not been used/,
  );
  assert.match(err, /Enable the Gmail API in project my-project-123/);

  google.consent = { account: ACCOUNT, deny: true };
  err = await failingSetup();
  assert.match(err, /\[1\/6\] authorization me@example\.com failed: consent was refused/);

  google.consent = { account: 'someone-else@example.com' };
  err = await failingSetup();
  assert.match(err, /the consent was given as someone-else@example\.com, not me@example\.com/);

  google.consent = { account: ACCOUNT, scopes: ['https://www.googleapis.com/auth/gmail.readonly'] };
  err = await failingSetup();
  assert.match(err, /granted without https:\/\/www\.googleapis\.com\/auth\/pubsub/);
});

test('--no-browser: the redirect address pasted on stdin completes the consent', async () => {
  resetGoogle();
  const d = await freshDir();
  const run = await setup(d, ['--subscription', 'pasted-sub'], 'paste');
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stderr, /paste the code/);
  assert.ok(run.stderr.includes('authorized (refresh token stored)'));
});

test('a revoked stored token is replaced by a new consent, with the 7-day testing-mode note', async () => {
  resetGoogle();
  const d = await freshDir();
  assert.equal((await setup(d, ['--subscription', 'revoke-sub'])).code, 0);
  fake.revokeGrants(ACCOUNT);
  const run = await setup(d, ['--subscription', 'revoke-sub']);
  assert.equal(run.code, 0, run.stderr);
  assert.match(
    run.stderr,
    /stored refresh token no longer works \(revoked, or 7 days passed while the OAuth app is in "Testing"\); authorizing again/,
  );
  assert.match(run.stdout, /Google expires refresh tokens after 7 days/);
  const cred = JSON.parse(await readFile(path.join(d.dir, 'secrets', `gmail-${ACCOUNT}.json`), 'utf8'));
  assert.equal(fake.grants.get(cred.refresh_token)?.revoked, false, 'the new token is stored');
});

test('push mode: a push subscription with an OIDC token; the same name in pull mode is reported, not reused', async () => {
  resetGoogle();
  const d = await freshDir();
  const endpoint = 'https://hooks.example.com/gmail-pubsub';
  const push = [
    '--mode',
    'push',
    '--push-endpoint',
    endpoint,
    '--push-service-account',
    PUSH_SA,
    '--subscription',
    'push-sub',
  ];
  const run = await setup(d, push);
  assert.equal(run.code, 0, run.stderr);
  assert.ok(run.stderr.includes('[4/6] subscription push-sub (push) … created'));
  const sub = fake.subscriptions.get(`projects/${PROJECT}/subscriptions/push-sub`)!;
  assert.deepEqual(sub.pushConfig, {
    pushEndpoint: endpoint,
    oidcToken: { serviceAccountEmail: PUSH_SA, audience: endpoint },
  });
  const gmail = hooksOf(await readFile(d.configPath, 'utf8')).gmail;
  assert.equal(gmail.mode, 'push');
  assert.equal(gmail.pushEndpoint, endpoint);
  assert.equal(gmail.pushServiceAccount, PUSH_SA);
  assert.deepEqual(gmail.serve, { bind: '127.0.0.1', port: 8788, path: '/gmail-pubsub' });
  const config = await readFile(d.configPath, 'utf8');

  const pull = await setup(d, ['--subscription', 'push-sub'], 'none');
  assert.equal(pull.code, 1);
  assert.match(
    pull.stderr,
    /\[4\/6\] subscription push-sub \(pull\) failed: subscription projects\/my-project-123\/subscriptions\/push-sub exists in push mode, not pull; delete it/,
  );
  assert.equal(await readFile(d.configPath, 'utf8'), config, 'the config stays as the push setup left it');
});

test('a subscription on another topic is reported', async () => {
  resetGoogle();
  google.topics.add(`projects/${PROJECT}/topics/elsewhere`);
  fake.subscription(`projects/${PROJECT}/subscriptions/taken-sub`, `projects/${PROJECT}/topics/elsewhere`).pushConfig =
    {};
  const err = await failingSetup(['--subscription', 'taken-sub']);
  assert.match(
    err,
    /exists but reads from projects\/my-project-123\/topics\/elsewhere, not projects\/my-project-123\/topics\/gmail-watch/,
  );
});

test('bad arguments exit 2 before anything is asked of Google', async () => {
  const d = await freshDir();
  const requests = fake.requests.length;
  for (const [args, message] of [
    [['--mode', 'push'], /--mode push needs --push-endpoint https/],
    [
      ['--mode', 'push', '--push-endpoint', 'http://insecure.example.com/x', '--push-service-account', PUSH_SA],
      /https/,
    ],
    [['--mode', 'push', '--push-endpoint', 'https://ok.example.com/x'], /--push-service-account/],
    [['--topic', 'goog-x'], /--topic must start with a letter/],
    [['--label', '../x'], /--label must be a Gmail label id/],
    [['--mode', 'poll'], /--mode must be pull or push/],
  ] as const) {
    const run = await setup(d, [...args], 'none');
    assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
    assert.match(run.stderr, message);
  }
  const missing = await runCli(['webhooks', 'gmail', 'setup', '--account', ACCOUNT]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /setup needs --project, --client-secret/);
  assert.equal(fake.requests.length, requests, 'no request reached Google');
  assert.equal(await readFile(d.configPath, 'utf8'), CONFIG);
});

test('webhooks gmail --help documents setup', async () => {
  const help = await runCli(['webhooks', 'gmail', '--help']);
  assert.equal(help.code, 0);
  for (const flag of [
    '--account',
    '--project',
    '--client-secret',
    '--mode pull|push',
    '--push-endpoint',
    '--no-browser',
  ])
    assert.ok(help.stdout.includes(flag), flag);
});

async function runCli(args: string[]): Promise<Run> {
  const child = spawn(process.execPath, [...CLI, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  return { code, stdout, stderr };
}
