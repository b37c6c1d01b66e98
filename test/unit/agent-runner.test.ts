import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { AgentRunner, retryAfterMs } from '../../plugin/hosts/standalone/server/agent-runner.ts';
import type { RunnerConfig, TurnOutcome } from '../../plugin/hosts/standalone/server/agent-runner.ts';
import { waitUntil } from '../helpers/common.ts';

const API_KEY = 'sk-test-SECRET-0123456789abcdef';

interface Seen {
  method: string | undefined;
  url: string | undefined;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}

type Handler = (req: http.IncomingMessage, body: string, res: http.ServerResponse) => void;

async function withServer(handler: Handler, fn: (baseUrl: string) => Promise<void>): Promise<void> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handler(req, Buffer.concat(chunks).toString('utf8'), res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    await fn(`http://127.0.0.1:${port}`);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function runner(config: Partial<RunnerConfig>): AgentRunner {
  return new AgentRunner(() => ({ defaultModel: 'echo/echo', providers: {}, ...config }));
}

function signal(): AbortSignal {
  return new AbortController().signal;
}

function assertError(outcome: TurnOutcome, pattern: RegExp): string {
  assert.equal(outcome.status, 'error', JSON.stringify(outcome));
  assert.ok(outcome.status === 'error');
  assert.match(outcome.error, pattern);
  assert.ok(!outcome.error.includes(API_KEY), `api key leaked: ${outcome.error}`);
  assert.ok(!outcome.error.includes('\n'), 'one line');
  return outcome.error;
}

test('echo: replies with the prompt verbatim, default model is echo/echo', async () => {
  const prompt = 'Hello\n  multi-line 🎉 "quoted"';
  assert.deepEqual(await runner({}).run({ prompt, timeoutMs: 30_000, signal: signal() }), {
    status: 'ok',
    reply: prompt,
  });
  assert.deepEqual(await runner({ defaultModel: '' }).run({ prompt, timeoutMs: 30_000, signal: signal() }), {
    status: 'ok',
    reply: prompt,
  });
  assert.deepEqual(
    await runner({ defaultModel: 'nope/x' }).run({
      prompt,
      model: 'echo/any/thing',
      timeoutMs: 30_000,
      signal: signal(),
    }),
    {
      status: 'ok',
      reply: prompt,
    },
  );
});

test('model refs: unknown provider and refs without a slash are errors naming them', async () => {
  const r = runner({});
  assertError(
    await r.run({ prompt: 'x', model: 'mystery/gpt-9', timeoutMs: 30_000, signal: signal() }),
    /^unknown model provider "mystery" \(model "mystery\/gpt-9"\)$/,
  );
  assertError(await r.run({ prompt: 'x', model: 'noslash', timeoutMs: 30_000, signal: signal() }), /"noslash"/);
  assertError(await r.run({ prompt: 'x', model: '/model', timeoutMs: 30_000, signal: signal() }), /"\/model"/);
  assertError(
    await r.run({ prompt: 'x', model: 'toString/x', timeoutMs: 30_000, signal: signal() }),
    /unknown model provider "toString"/,
  );
});

test('openai-compatible provider: request shape and completion', async () => {
  const seen: Seen[] = [];
  await withServer(
    (req, body, res) => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body: JSON.parse(body) });
      json(res, 200, {
        id: 'c1',
        object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', content: 'pong' }, finish_reason: 'stop' }],
      });
    },
    async (base) => {
      const r = runner({ providers: { local: { baseUrl: `${base}/v1/`, apiKey: API_KEY } } });
      const outcome = await r.run({
        prompt: 'ping',
        model: 'local/org/model-7b',
        thinking: 'high',
        timeoutMs: 30_000,
        signal: signal(),
      });
      assert.deepEqual(outcome, { status: 'ok', reply: 'pong' });

      assert.equal(seen.length, 1);
      const s = seen[0]!;
      assert.equal(s.method, 'POST');
      assert.equal(s.url, '/v1/chat/completions');
      assert.equal(s.headers.authorization, `Bearer ${API_KEY}`);
      assert.match(String(s.headers['content-type']), /^application\/json/);
      assert.deepEqual(s.body, {
        model: 'org/model-7b',
        messages: [{ role: 'user', content: 'ping' }],
        reasoning_effort: 'high',
      });

      // Without apiKey and thinking: no auth header, no reasoning_effort; default model used.
      const plain = runner({ defaultModel: 'bare/m', providers: { bare: { baseUrl: `${base}/?tenant=a` } } });
      assert.deepEqual(await plain.run({ prompt: 'hi', timeoutMs: 30_000, signal: signal() }), {
        status: 'ok',
        reply: 'pong',
      });
      const s2 = seen[1]!;
      assert.equal(s2.url, '/chat/completions?tenant=a');
      assert.equal(s2.headers.authorization, undefined);
      assert.deepEqual(s2.body, { model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    },
  );
});

test('openai-compatible provider: content given as an array of parts is joined', async () => {
  await withServer(
    (_req, _body, res) =>
      json(res, 200, {
        choices: [
          {
            message: {
              role: 'assistant',
              content: [
                { type: 'text', text: 'Hello, ' },
                { type: 'image_url', image_url: { url: 'x' } },
                { type: 'text', text: 'world' },
              ],
            },
          },
        ],
      }),
    async (base) => {
      const r = runner({ providers: { p: { baseUrl: base } } });
      assert.deepEqual(await r.run({ prompt: 'x', model: 'p/m', timeoutMs: 30_000, signal: signal() }), {
        status: 'ok',
        reply: 'Hello, world',
      });
    },
  );
});

test('openai-compatible provider: a configured provider named echo replaces the built-in one', async () => {
  await withServer(
    (_req, _body, res) => json(res, 200, { choices: [{ message: { content: 'from server' } }] }),
    async (base) => {
      const r = runner({ providers: { echo: { baseUrl: base } } });
      assert.deepEqual(await r.run({ prompt: 'x', timeoutMs: 30_000, signal: signal() }), {
        status: 'ok',
        reply: 'from server',
      });
    },
  );
});

test('openai-compatible provider: HTTP 500 carries the status and error.message, not the api key', async () => {
  await withServer(
    (req, _body, res) =>
      json(res, 500, {
        error: {
          message: `backend exploded\nwhile using ${String(req.headers.authorization)} ` + 'z'.repeat(1000),
          type: 'server_error',
        },
      }),
    async (base) => {
      const r = runner({ providers: { p: { baseUrl: base, apiKey: API_KEY } } });
      const error = assertError(
        await r.run({ prompt: 'x', model: 'p/m', timeoutMs: 30_000, signal: signal() }),
        /500.*backend exploded while using/,
      );
      assert.ok(error.length < 500, `truncated (${error.length} chars)`);
    },
  );
});

test('openai-compatible provider: HTTP error without a JSON body still names the status', async () => {
  await withServer(
    (_req, _body, res) => {
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.end('upstream down');
    },
    async (base) => {
      const r = runner({ providers: { p: { baseUrl: base, apiKey: API_KEY } } });
      assertError(await r.run({ prompt: 'x', model: 'p/m', timeoutMs: 30_000, signal: signal() }), /HTTP 503/);
    },
  );
});

test('openai-compatible provider: bad JSON and missing content are errors', async () => {
  let mode = 'bad-json';
  await withServer(
    (_req, _body, res) => {
      if (mode === 'bad-json') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"choices": [');
      } else {
        json(res, 200, { choices: [{ message: { role: 'assistant', content: null } }] });
      }
    },
    async (base) => {
      const r = runner({ providers: { p: { baseUrl: base, apiKey: API_KEY } } });
      assertError(await r.run({ prompt: 'x', model: 'p/m', timeoutMs: 30_000, signal: signal() }), /invalid JSON/);
      mode = 'no-content';
      assertError(
        await r.run({ prompt: 'x', model: 'p/m', timeoutMs: 30_000, signal: signal() }),
        /without message content/,
      );
    },
  );
});

test('openai-compatible provider: a provider that never answers times out via the abort signal', async () => {
  let requests = 0;
  const ac = new AbortController();
  await withServer(
    () => {
      requests++; // never respond; the signal fires once the provider holds the request
      ac.abort();
    },
    async (base) => {
      const r = runner({ providers: { slow: { baseUrl: base, apiKey: API_KEY } } });
      const outcome = await r.run({ prompt: 'x', model: 'slow/m', timeoutMs: 30_000, signal: ac.signal });
      assert.deepEqual(outcome, { status: 'timeout', error: 'timed out' });
      assert.equal(requests, 1);

      // AbortSignal.timeout works the same way.
      const viaTimeout = await r.run({
        prompt: 'x',
        model: 'slow/m',
        timeoutMs: 30_000,
        signal: AbortSignal.timeout(100),
      });
      assert.equal(viaTimeout.status, 'timeout');
    },
  );
});

test('openai-compatible provider: an answer whose body stalls times the turn out at its limit, and a stop ends it at once', async () => {
  let begun = 0;
  await withServer(
    (_req, _body, res) => {
      // The headers and the start of a completion, then nothing more.
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
      res.write('{"choices":[{"message":{"content":"half', () => begun++);
    },
    async (base) => {
      const r = runner({ providers: { stalls: { baseUrl: base } } });
      const limited = await r.run({ prompt: 'x', model: 'stalls/m', timeoutMs: 300, signal: signal() });
      assert.deepEqual(limited, { status: 'timeout', error: 'timed out' });
      const stop = new AbortController();
      const stopped = r.run({ prompt: 'x', model: 'stalls/m', timeoutMs: 600_000, signal: stop.signal });
      await waitUntil(() => begun === 2, 'the second answer begun');
      stop.abort();
      assert.deepEqual(await stopped, { status: 'timeout', error: 'timed out' });
    },
  );
});

test('openai-compatible provider: connection refused is an error without the api key', async () => {
  // Find a port that nothing listens on.
  const probe = http.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));

  const r = runner({ providers: { gone: { baseUrl: `http://127.0.0.1:${port}/v1?key=${API_KEY}`, apiKey: API_KEY } } });
  const error = assertError(
    await r.run({ prompt: 'x', model: 'gone/m', timeoutMs: 30_000, signal: signal() }),
    /connection refused/,
  );
  assert.match(error, new RegExp(`127\\.0\\.0\\.1:${port}`));
});

test('invalid provider config is an error, never a throw', async () => {
  const r = runner({ providers: { bad: { baseUrl: 'not a url' }, ftp: { baseUrl: 'ftp://example.com' } } });
  assertError(await r.run({ prompt: 'x', model: 'bad/m', timeoutMs: 30_000, signal: signal() }), /invalid baseUrl/);
  assertError(await r.run({ prompt: 'x', model: 'ftp/m', timeoutMs: 30_000, signal: signal() }), /not http/);
  const creds = runner({ providers: { c: { baseUrl: 'http://user:hunter2-password@127.0.0.1:1/v1' } } });
  const error = assertError(
    await creds.run({ prompt: 'x', model: 'c/m', timeoutMs: 30_000, signal: signal() }),
    /credentials/,
  );
  assert.ok(!error.includes('hunter2'));
  const throwing = new AgentRunner(() => {
    throw new Error('config unavailable');
  });
  assertError(await throwing.run({ prompt: 'x', timeoutMs: 30_000, signal: signal() }), /config unavailable/);
});

test('failures that may pass are retryable (no answer, 429 with its Retry-After, 5xx); other 4xx, bad answers and timeouts are not', async () => {
  const probe = http.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const refused = await runner({ providers: { gone: { baseUrl: `http://127.0.0.1:${port}/v1` } } }).run({
    prompt: 'x',
    model: 'gone/m',
    timeoutMs: 30_000,
    signal: signal(),
  });
  assert.ok(refused.status === 'error' && refused.retryable === true, JSON.stringify(refused));

  const answers: Record<string, (res: http.ServerResponse) => void> = {
    '/unavailable/chat/completions': (res) => json(res, 503, { error: { message: 'down' } }),
    '/limited/chat/completions': (res) => {
      res.writeHead(429, { 'retry-after': '7' });
      res.end();
    },
    '/limited-until/chat/completions': (res) => {
      res.writeHead(429, { 'retry-after': new Date(Date.now() + 60_000).toUTCString() });
      res.end();
    },
    '/bad/chat/completions': (res) => json(res, 400, { error: { message: 'no such parameter' } }),
    '/forbidden/chat/completions': (res) => json(res, 403, {}),
    '/garbled/chat/completions': (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"choices": [');
    },
  };
  await withServer(
    (req, _body, res) => answers[req.url!]!(res),
    async (base) => {
      const providers = Object.fromEntries(
        Object.keys(answers).map((p) => [p.split('/')[1]!, { baseUrl: `${base}/${p.split('/')[1]}` }]),
      );
      const r = runner({ providers });
      const run = (name: string): Promise<TurnOutcome> =>
        r.run({ prompt: 'x', model: `${name}/m`, timeoutMs: 30_000, signal: signal() });
      const unavailable = await run('unavailable');
      assert.ok(unavailable.status === 'error' && unavailable.retryable === true);
      assert.equal(unavailable.retryAfterMs, undefined);
      const limited = await run('limited');
      assert.ok(limited.status === 'error' && limited.retryable === true);
      assert.equal(limited.retryAfterMs, 7000);
      const until = await run('limited-until');
      assert.ok(until.status === 'error' && until.retryAfterMs !== undefined);
      assert.ok(until.retryAfterMs > 55_000 && until.retryAfterMs <= 60_000, String(until.retryAfterMs));
      for (const name of ['bad', 'forbidden', 'garbled']) {
        const outcome = await run(name);
        assert.ok(outcome.status === 'error' && outcome.retryable === undefined, `${name}: ${JSON.stringify(outcome)}`);
      }
    },
  );

  await withServer(
    () => {}, // never answers
    async (base) => {
      const controller = new AbortController();
      const turn = runner({ providers: { slow: { baseUrl: base } } }).run({
        prompt: 'x',
        model: 'slow/m',
        timeoutMs: 30_000,
        signal: controller.signal,
      });
      controller.abort('timeout');
      const outcome = await turn;
      assert.equal(outcome.status, 'timeout');
      assert.ok(!('retryable' in outcome));
    },
  );
});

test('Retry-After: delay-seconds or an HTTP date; anything else is ignored', () => {
  const now = Date.parse('2026-11-25T12:00:00Z');
  assert.equal(retryAfterMs('120', now), 120_000);
  assert.equal(retryAfterMs(' 0 ', now), 0);
  assert.equal(retryAfterMs('Wed, 25 Nov 2026 12:00:30 GMT', now), 30_000);
  assert.equal(retryAfterMs('Wed, 25 Nov 2026 11:00:00 GMT', now), 0, 'a date past is no wait');
  assert.equal(retryAfterMs(null, now), undefined);
  assert.equal(retryAfterMs('-5', now), undefined);
  assert.equal(retryAfterMs('soon', now), undefined);
});
