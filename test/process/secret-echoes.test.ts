// The real gateway with a model provider and a chat platform that echo the credentials they were
// given back in a changed form: upper-cased, inside base64 and base64url (a Basic credential, a JSON
// document), URL-encoded, JSON-escaped, and split by zero-width spaces. None of it reaches the outbox,
// the failures, the log, a run's record or any session's history: each is read by a leak check of
// its own (case folded, escapes undone, base64 runs decoded at every offset), not by the redactor.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { startFakeProvider } from '../helpers/fake-provider.ts';
import { fakeTelegram } from '../helpers/fake-channels/telegram.ts';
import { eventually, spawnGateway, tempStateDir, writeConfig, type SpawnedGateway } from '../helpers/spawn-gateway.ts';

const BOT_TOKEN = '7741852963:AAHx-secretBotToken_0123456789abcdefgh';
const API_KEY = 'sk-proj/Echo+Key"0123456789abcdefGHIJKL';

/** The changed forms a peer may echo a secret in, by name. */
function forms(secret: string): Record<string, string> {
  return {
    upper: secret.toUpperCase(),
    base64: Buffer.from(`user:${secret}`).toString('base64'),
    base64url: Buffer.from(JSON.stringify({ token: secret, n: 1 })).toString('base64url'),
    url: encodeURIComponent(secret),
    json: JSON.stringify(secret).slice(1, -1).replaceAll('/', '\\/'),
    zeroWidth: [...secret].join('\u200b'),
  };
}

const ZERO_WIDTH = /[\u200b-\u200f\u2060\ufeff]/g;

function decodeUri(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Whether `text` holds `secret` in any of the forms above (or as it is). */
function leaks(text: string, secret: string): boolean {
  const plain = text.replace(ZERO_WIDTH, '');
  const needle = secret.toLowerCase();
  // Escapes undone once and twice: a JSON-escaped echo inside a JSON answer is escaped twice.
  const unescaped = plain.replace(/\\(.)/g, '$1');
  for (const v of [plain, decodeUri(plain), unescaped, unescaped.replace(/\\(.)/g, '$1')]) {
    if (v.toLowerCase().includes(needle)) return true;
  }
  for (const run of plain.match(/[A-Za-z0-9+/_-]{12,}/g) ?? []) {
    const standard = run.replaceAll('-', '+').replaceAll('_', '/');
    for (let shift = 0; shift < 4; shift++) {
      const decoded = Buffer.from(standard.slice(shift), 'base64').toString('latin1');
      if (decoded.includes(secret) || decoded.replace(/\\(.)/g, '$1').includes(secret)) return true;
    }
  }
  return false;
}

function assertNoLeak(where: string, text: string): void {
  for (const [name, secret] of [
    ['the bot token', BOT_TOKEN],
    ['the API key', API_KEY],
  ] as const) {
    assert.ok(!leaks(text, secret), `${name} leaked into ${where}:\n${text}`);
  }
}

test('the oracle itself finds every form', () => {
  for (const secret of [BOT_TOKEN, API_KEY]) {
    for (const [name, form] of Object.entries(forms(secret))) {
      assert.ok(leaks(`error: ${form} end`, secret), name);
      assert.ok(leaks(JSON.stringify({ error: `error: ${form} end` }), secret), `${name} in JSON`);
    }
  }
});

test('credentials a provider or a platform echoes in a changed form reach no record, log or session', async () => {
  const keyForms = forms(API_KEY);
  const tokenForms = forms(BOT_TOKEN);
  // The prompt says what to echo: "<kind> <form name>".
  const provider = await startFakeProvider((req, res: ServerResponse) => {
    const prompt = String(req.body.messages?.[0]?.content ?? '');
    const [, kind, name] = /(fail|echo|send) (\w+)/.exec(prompt) ?? [];
    res.setHeader('content-type', 'application/json');
    if (kind === 'fail') {
      res.statusCode = 400;
      res.end(JSON.stringify({ error: { message: `invalid api key ${keyForms[name!]} (${name})` } }));
      return;
    }
    const content = kind === 'echo' ? `your key is ${keyForms[name!]}` : `a reply to send (${name})`;
    res.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content } }] }));
  });
  const telegram = await fakeTelegram(BOT_TOKEN);
  const names = Object.keys(tokenForms);
  names.forEach((name, i) => {
    telegram.aimed.push({
      match: (a) => String(a.body?.chat_id) === String(2000 + i),
      reply: {
        status: 400,
        body: { ok: false, error_code: 400, description: `Bad Request: bot ${tokenForms[name]} was blocked (${name})` },
      },
    });
  });
  const dir = await tempStateDir();
  await writeConfig(dir, {
    models: { providers: { fake: { baseUrl: provider.baseUrl, apiKey: API_KEY } } },
    agents: { defaults: { model: 'fake/m', models: ['fake/m'] }, list: [{ id: 'main', default: true }] },
    channels: { telegram: { botToken: BOT_TOKEN, apiRoot: telegram.url, defaultTo: '1000' } },
  });
  let gw: SpawnedGateway | undefined;
  try {
    gw = await spawnGateway(dir);
    const runIds: string[] = [];
    for (const [i, name] of names.entries()) {
      for (const [kind, to] of [
        ['fail', '1000'],
        ['echo', String(1100 + i)],
        ['send', String(2000 + i)],
      ] as const) {
        // Each its own hook name: a dead letter's event is never held for the next minute.
        const r = await gw.hook('/hooks/agent', {
          message: `${kind} ${name}`,
          name: `${kind}-${name}`,
          channel: 'telegram',
          to,
        });
        assert.equal(r.status, 202, JSON.stringify(r.body));
        runIds.push(r.body.runId);
      }
    }
    const g = gw;
    // Every run ended; every refused delivery is a failure.
    const runs = await Promise.all(
      runIds.map((id) =>
        eventually(async () => {
          const run = await g.admin(`/api/runs/${id}`);
          return ['ok', 'error', 'timeout'].includes(run.status) && run;
        }, 60_000),
      ),
    );
    assert.equal(runs.filter((r) => r.status === 'error').length, names.length, 'the provider refused one per form');
    const failures = await eventually(async () => {
      const page = await g.admin('/api/failures?limit=1000');
      return page.failures.length === 2 * names.length && page;
    }, 60_000);
    const outbox = await eventually(async () => {
      const page = await g.admin('/api/outbox?limit=1000');
      return page.deliveries.filter((d: any) => d.status === 'failed').length === names.length && page;
    }, 60_000);
    // The echoes did happen: the texts name the forms, with the credentials masked.
    assert.ok(
      runs.some((r) => /invalid api key \[redacted\]/.test(r.error ?? '')),
      JSON.stringify(runs),
    );
    assert.ok(
      runs.some((r) => /your key is \[redacted\]/.test(r.reply ?? '')),
      JSON.stringify(runs),
    );
    assert.ok(
      outbox.deliveries.some((d: any) => /bot \[redacted\] was blocked/.test(d.error ?? '')),
      JSON.stringify(outbox),
    );

    assertNoLeak('the outbox', JSON.stringify(outbox));
    assertNoLeak('GET /api/failures', JSON.stringify(failures));
    for (const run of runs) assertNoLeak(`GET /api/runs/${run.runId}`, JSON.stringify(run));
    const sessions = (await g.admin('/api/sessions')).sessions as { key: string }[];
    assert.ok(sessions.some((s) => s.key === 'agent:main:main'));
    for (const { key } of sessions) {
      const history = await g.admin(`/api/sessions/${encodeURIComponent(key)}/history?limit=1000`);
      assertNoLeak(`the history of ${key}`, JSON.stringify(history));
    }
    assert.equal(await g.stop(), 0);
    assertNoLeak('the log', g.output());
    assert.match(g.output(), /a reply delivery failed for good/);
    assert.match(g.output(), /an agent run failed for good/);
  } finally {
    await gw?.stop();
    await provider.close();
    await telegram.close();
  }
});
