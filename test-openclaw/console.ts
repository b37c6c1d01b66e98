// The console inside a real OpenClaw, from the installed package: /hookgate/ui/ logged in with
// OpenClaw's gateway token (never the hook token), every view reached, Pause and Resume from the
// keyboard alone (a wake while paused is held, then taken in), a forged change refused, no request
// leaving loopback, axe-core on the views. Registered by run.ts; run alone with
// `node --import tsx --test test-openclaw/console.ts`. Its gateway and model are its own.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import {
  type GatewayFiles,
  type HooksBlock,
  type RunningGateway,
  startModelGateway,
  stopModelGateway,
} from './openclaw-env.ts';
import { streamReply, type FakeProvider } from '../test/helpers/fake-provider.ts';
import { openBrowser, seriousViolations, type TestBrowser } from '../test/helpers/browser.ts';

const nonce = Math.random().toString(36).slice(2, 8);

const HOOKS: HooksBlock = {
  enabled: true,
  token: `hook-console-${nonce}-0123456789`,
  path: '/hooks',
};

let files: GatewayFiles;
let gw: RunningGateway;
let model: FakeProvider;
let b: TestBrowser;

async function adminHooks(): Promise<{ name: string; paused: boolean; held: number }[]> {
  const res = await fetch(`${gw.url}/hookgate/api/hooks`, {
    headers: { authorization: `Bearer ${files.gatewayToken}` },
    signal: AbortSignal.timeout(15_000),
  });
  return ((await res.json()) as { hooks: { name: string; paused: boolean; held: number }[] }).hooks;
}

const queued = async (): Promise<string[]> =>
  ((await gw.call('status')).queuedSystemEvents as string[] | undefined) ?? [];

async function tabTo(page: Page, target: ReturnType<Page['locator']>): Promise<void> {
  for (let i = 0; i < 60; i++) {
    await page.keyboard.press('Tab');
    if (await target.evaluate((el) => el === document.activeElement)) return;
  }
  assert.fail('the control was not reached with Tab');
}

async function assertAccessible(page: Page, where: string): Promise<void> {
  const violations = await seriousViolations(page);
  assert.deepEqual(
    violations.map((v) => `${v.id}: ${v.help}`),
    [],
    `axe-core on ${where}`,
  );
}

describe('the console inside OpenClaw', { timeout: 10 * 60_000 }, () => {
  before(
    async () => {
      ({ files, gw, model } = await startModelGateway(HOOKS, (_req, res) => streamReply(res, `done ${nonce}`)));
      b = await openBrowser();
    },
    { timeout: 5 * 60_000 },
  );

  after(async () => {
    await b?.close();
    await stopModelGateway({ files, gw, model });
  });

  test("/hookgate/ui/ logs in with OpenClaw's gateway token, not the hook token", async () => {
    const { page } = b;
    await page.goto(`${gw.url}/hookgate/ui/#/hooks`);
    await page.getByLabel('Gateway token').fill(HOOKS.token);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByText('Wrong gateway token.').waitFor();
    await page.getByLabel('Gateway token').fill(files.gatewayToken);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Hooks' }).waitFor();
    const [cookie] = await b.context.cookies();
    assert.deepEqual(
      [cookie?.name, cookie?.path, cookie?.httpOnly, cookie?.sameSite],
      ['hookgate_session', '/hookgate/ui/', true, 'Strict'],
    );
  });

  test('every view answers with its heading', async () => {
    const { page } = b;
    for (const [link, heading] of [
      ['Overview', 'Overview'],
      ['Requests', 'Requests'],
      ['Runs', 'Runs'],
      ['Failures', 'Failures'],
      ['Hooks', 'Hooks'],
      ['Try a hook', 'Try a hook'],
    ]) {
      await page.getByRole('navigation').getByRole('link', { name: link, exact: true }).click();
      await page.getByRole('heading', { level: 1, name: heading }).waitFor();
      await assertAccessible(page, link!);
    }
  });

  test('Pause and Resume from the keyboard: a wake while paused is held, then taken in', async () => {
    const { page } = b;
    await page.goto(`${gw.url}/hookgate/ui/#/hooks`);
    await page.getByRole('heading', { level: 1, name: 'Hooks' }).waitFor();
    const wake = page.locator('tr[data-hook="wake"]');
    await tabTo(page, wake.getByRole('button', { name: 'Pause' }));
    await page.keyboard.press('Enter');
    await wake.getByRole('button', { name: 'Resume' }).waitFor();
    assert.equal((await adminHooks()).find((h) => h.name === 'wake')?.paused, true);
    const text = `held in openclaw ${nonce}`;
    const held = await fetch(`${gw.url}/hooks/wake`, {
      method: 'POST',
      headers: { authorization: `Bearer ${HOOKS.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text, mode: 'next-heartbeat' }),
    });
    assert.equal(held.status, 202);
    assert.ok(!(await queued()).includes(text));
    await page.reload();
    await wake.getByRole('button', { name: 'Resume' }).waitFor();
    await tabTo(page, wake.getByRole('button', { name: 'Resume' }));
    await page.keyboard.press('Enter');
    await wake.getByRole('button', { name: 'Pause' }).waitFor();
    await gw.until('the held wake taken in', 60_000, async () => (await queued()).includes(text) || undefined);
  });

  test('a change without the anti-forgery token is refused and changes nothing', async () => {
    const status = await b.page.evaluate(async () => {
      const res = await fetch('api/hooks/wake/pause', { method: 'POST', credentials: 'same-origin' });
      return res.status;
    });
    assert.equal(status, 403);
    assert.equal((await adminHooks()).find((h) => h.name === 'wake')?.paused, false);
  });

  test('Log out ends the session; no request of the page left loopback', async () => {
    const { page } = b;
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByLabel('Gateway token').waitFor();
    assert.equal(await page.evaluate(async () => (await fetch('api/session')).status), 401);
    const host = new URL(gw.url).host;
    assert.deepEqual(
      b.requested.filter((u) => new URL(u).host !== host),
      [],
    );
  });
});
