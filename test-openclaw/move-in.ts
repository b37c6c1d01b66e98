// Moving in from OpenClaw's built-in hooks, in an OpenClaw of its own (the user's config: JSON5 with
// comments, no plugins.allow). Before: the built-in hooks and the bundled webhooks plugin are on, the
// plugin warns at start, and the README's comparison rows for those two are probed. Then
// `hookgate openclaw import` (the installed package's own bin) moves the hooks block over, and after a
// restart the same sender (x-openclaw-token), the same transform and the same fan-out go through hookgate.
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import {
  installPlugin,
  openClawMeta,
  prepareFiles,
  quietGatewayConfig,
  removeFiles,
  launchGateway,
  type GatewayFiles,
  type RunningGateway,
} from './openclaw-env.ts';

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: Record<string, unknown> | undefined;
}
type Post = (
  pathname: string,
  body: string,
  opts: { headers?: Record<string, string>; base: string; token?: string },
) => Promise<Answer>;

const WARNING = /built-in hooks are enabled on \/hooks, which overlaps hookgate's \/hooks/;

/** The user's OpenClaw config before the move: their comments, their hooks, the webhooks plugin on. */
function userConfig(files: GatewayFiles, meta: unknown, hookToken: string, webhookSecret: string): string {
  const quiet = JSON.stringify({ ...quietGatewayConfig(files), meta }, null, 2).slice(1, -2);
  return `// My OpenClaw (written by test-openclaw/move-in.ts)
{${quiet},
  // The built-in webhook receiver: senders use x-openclaw-token.
  hooks: {
    enabled: true,
    token: "${hookToken}", // rotated in March
    path: "/hooks",
    mappings: [
      { id: "legacy", match: { path: "legacy" }, action: "wake", wakeMode: "next-heartbeat", transform: { module: "legacy.js" } },
      /* one wake per item */
      { id: "batch", match: { path: "batch" }, action: "wake", wakeMode: "next-heartbeat", forEach: "items", textTemplate: "item {{items[0].n}}" },
    ],
  },
  plugins: {
    entries: {
      hookgate: { enabled: true },
      webhooks: {
        enabled: true,
        config: { routes: { probe: { path: "/plugins/webhooks/probe", sessionKey: "agent:main:hook:automation", secret: "${webhookSecret}" } } },
      },
    },
  },
}
`;
}

// Written the way OpenClaw's docs write a transform: ctx.url is a URL, the answer uses kind and mode.
const LEGACY_TRANSFORM = `export default function transform(ctx) {
  return { kind: 'wake', mode: 'next-heartbeat', text: 'legacy ' + ctx.payload.n + ' via ' + ctx.url.pathname };
}
`;

export function moveInSuite(post: Post, queued: (gw: RunningGateway) => Promise<string[]>): void {
  describe('moving in from OpenClaw built-in hooks', { timeout: 5 * 60_000 }, () => {
    const nonce = Math.random().toString(36).slice(2, 8);
    const hookToken = `builtin-${nonce}-0123456789`;
    const webhookSecret = `webhook-${nonce}-0123456789`;
    let files: GatewayFiles;
    let root: string;
    let gw: RunningGateway | undefined;

    const start = async (): Promise<RunningGateway> => {
      gw = launchGateway(files);
      await gw.waitForLine(/hookgate ready/, 120_000);
      return gw;
    };
    const send = (pathname: string, body: unknown, headers: Record<string, string>) =>
      post(pathname, JSON.stringify(body), { headers, base: gw!.url });

    before(
      async () => {
        files = await prepareFiles();
        root = await installPlugin(files);
        await mkdir(path.join(files.stateDir, 'hooks', 'transforms'), { recursive: true });
        await writeFile(path.join(files.stateDir, 'hooks', 'transforms', 'legacy.js'), LEGACY_TRANSFORM);
        const meta = await openClawMeta(files.configPath);
        await writeFile(files.configPath, userConfig(files, meta, hookToken, webhookSecret), { mode: 0o600 });
      },
      { timeout: 5 * 60_000 },
    );
    after(async () => {
      await gw?.stop();
      if (files) await removeFiles(files);
    });

    test('built-in hooks on the same path: hookgate warns at start, and OpenClaw answers /hooks', async () => {
      const running = await start();
      await running.waitForLine(WARNING, 10_000);
      // eventOutcome is OpenClaw's answer, not hookgate's.
      const r = await send('/hooks/legacy', { n: 1 }, { 'x-openclaw-token': hookToken });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.json, { ok: true, mode: 'next-heartbeat', eventOutcome: 'queued' });
      assert.ok((await queued(running)).includes('legacy 1 via /hooks/legacy'));
    });

    test('comparison, built-in hooks: Bearer and x-openclaw-token taken, x-service-token refused, fan-out, plain-text 404', async () => {
      const bearer = await send('/hooks/legacy', { n: 2 }, { authorization: `Bearer ${hookToken}` });
      assert.equal(bearer.status, 200, bearer.text);
      const service = await send('/hooks/legacy', { n: 3 }, { 'x-service-token': hookToken });
      assert.equal(service.status, 401, service.text);
      const fan = await send('/hooks/batch', { items: [{ n: 1 }, { n: 2 }] }, { 'x-openclaw-token': hookToken });
      assert.equal(fan.status, 200, fan.text);
      const events = await queued(gw!);
      assert.ok(events.includes('item 1') && events.includes('item 2'), JSON.stringify(events));
      const missing = await send('/hooks/nothing', {}, { 'x-openclaw-token': hookToken });
      assert.equal(missing.status, 404);
      assert.equal(missing.json, undefined, `not JSON: ${missing.text}`);
    });

    test('comparison, bundled webhooks plugin: its own secret as Bearer or x-openclaw-webhook-secret only', async () => {
      const action = { action: 'list_flows' };
      const bearer = await send('/plugins/webhooks/probe', action, { authorization: `Bearer ${webhookSecret}` });
      assert.equal(bearer.status, 200, bearer.text);
      const own = await send('/plugins/webhooks/probe', action, { 'x-openclaw-webhook-secret': webhookSecret });
      assert.equal(own.status, 200, own.text);
      for (const header of ['x-openclaw-token', 'x-service-token']) {
        const r = await send('/plugins/webhooks/probe', action, { [header]: webhookSecret });
        assert.equal(r.status, 401, `${header}: ${r.text}`);
      }
      // It drives TaskFlow records, not wakes or agent runs: a hook payload is refused.
      const wake = await send(
        '/plugins/webhooks/probe',
        { text: 'hello' },
        { authorization: `Bearer ${webhookSecret}` },
      );
      assert.equal(wake.status, 400, wake.text);
      assert.notEqual(wake.json, undefined, `JSON: ${wake.text}`);
    });

    test('hookgate openclaw import moves the block (comments kept); after a restart hookgate serves the same senders', async () => {
      await gw!.stop();
      gw = undefined;
      const bin = path.join(root, 'bin', 'hookgate');
      const { stdout } = await promisify(execFile)('sh', [
        bin,
        'openclaw',
        'import',
        '--openclaw-config',
        files.configPath,
      ]);
      assert.match(stdout, /moved hooks\.token, hooks\.path, hooks\.mappings to plugins\.entries\.hookgate\.config/);
      assert.match(stdout, /set hooks\.enabled: false/);
      assert.match(stdout, /textTemplate: \{\{items\[0\]…\}\} rewritten as \{\{item…\}\}/);
      const text = await readFile(files.configPath, 'utf8');
      for (const comment of ['// My OpenClaw', '// rotated in March', '/* one wake per item */'])
        assert.ok(text.includes(comment), comment);

      const running = await start();
      assert.equal(running.count(WARNING), 0, running.tail(20));
      // No eventOutcome: hookgate answered, with the sender's header and the transform as they were.
      const r = await send('/hooks/legacy', { n: 4 }, { 'x-openclaw-token': hookToken });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.json, { ok: true, mode: 'next-heartbeat' });
      const fan = await send('/hooks/batch', { items: [{ n: 5 }, { n: 6 }] }, { 'x-openclaw-token': hookToken });
      assert.equal(fan.status, 200, fan.text);
      assert.deepEqual(fan.json, { ok: true, mode: 'next-heartbeat', count: 2 });
      const events = await queued(running);
      for (const text of ['legacy 4 via /hooks/legacy', 'item 5', 'item 6'])
        assert.ok(
          events.some((e) => e.includes(text)),
          `${text} in ${JSON.stringify(events)}`,
        );
      const service = await send('/hooks/legacy', { n: 7 }, { 'x-service-token': hookToken });
      assert.equal(service.status, 200, service.text);
    });
  });
}
