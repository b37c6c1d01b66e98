// Property-based fuzzing of the real gateway process over loopback: bodies, headers, paths, query
// strings and methods chosen by fast-check (fixed seeds, so every run is the same run). Every answer
// must be a well-formed JSON response with a sensible status, and the process must survive it all.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import fc from 'fast-check';
import {
  GATEWAY_TOKEN,
  HOOK_TOKEN,
  spawnGateway,
  tempStateDir,
  writeConfig,
  type SpawnedGateway,
} from '../helpers/spawn-gateway.ts';

const MAX_BODY = 262_144; // hooks.maxBodyBytes default
const RUNS = 200;
/** Per request: a request the server has all of must be answered well within this. */
const REQUEST_TIMEOUT_MS = 8000;

let gw: SpawnedGateway;
let port: number;

before(async () => {
  const dir = await tempStateDir();
  await writeConfig(dir, {
    // Fuzzed wrong tokens must not lock loopback out of the later properties.
    gateway: { trustedProxies: ['127.0.0.1'] },
    hooks: { authRateLimit: { maxFailures: 1_000_000 }, bodyTimeoutSeconds: 2 },
  });
  gw = await spawnGateway(dir);
  port = Number(new URL(gw.url).port);
});

after(async () => {
  await gw?.stop();
});

// ---------------------------------------------------------------------------
// A raw HTTP/1.1 client: fetch normalises paths ("..", "%2e"), refuses some header values and methods,
// and cannot repeat a header, so most properties write the request bytes themselves.

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

type RawResult = { kind: 'response'; res: RawResponse } | { kind: 'closed'; error?: string };

function rawRequest(data: Buffer, o: { head?: boolean; timeoutMs?: number } = {}): Promise<RawResult> {
  const timeoutMs = o.timeoutMs ?? REQUEST_TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    let error: string | undefined;
    let done = false;
    const finish = (r: RawResult | Error): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      if (r instanceof Error) reject(r);
      else resolve(r);
    };
    const timer = setTimeout(
      () =>
        finish(
          new Error(
            `no complete answer within ${timeoutMs} ms; got ${JSON.stringify(buf.toString('latin1').slice(0, 300))}`,
          ),
        ),
      timeoutMs,
    );
    const parse = (eof: boolean): void => {
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
        const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0]!);
        if (!m) return finish(new Error(`bad status line ${JSON.stringify(lines[0])}`));
        const status = Number(m[1]);
        const headers: Record<string, string> = {};
        for (const line of lines.slice(1)) {
          const i = line.indexOf(':');
          headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
        }
        const rest = buf.subarray(end + 4);
        if (status < 200) {
          buf = rest; // 100 Continue: the real answer follows
          continue;
        }
        const empty = Buffer.alloc(0);
        if (o.head || status === 204 || status === 304)
          return finish({ kind: 'response', res: { status, headers, body: empty } });
        const length = headers['content-length'];
        if (length !== undefined) {
          const n = Number(length);
          if (rest.length >= n)
            return finish({ kind: 'response', res: { status, headers, body: rest.subarray(0, n) } });
          return;
        }
        if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
          const parts: Buffer[] = [];
          let p = 0;
          for (;;) {
            const le = rest.indexOf('\r\n', p);
            if (le < 0) return;
            const size = parseInt(rest.subarray(p, le).toString('latin1'), 16);
            if (Number.isNaN(size)) return finish(new Error('bad chunk size in the response'));
            if (size === 0) return finish({ kind: 'response', res: { status, headers, body: Buffer.concat(parts) } });
            if (rest.length < le + 2 + size + 2) return;
            parts.push(rest.subarray(le + 2, le + 2 + size));
            p = le + 2 + size + 2;
          }
        }
        if (eof) return finish({ kind: 'response', res: { status, headers, body: rest } });
        return;
      }
    };
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      parse(false);
    });
    socket.on('error', (e: NodeJS.ErrnoException) => {
      error = e.code ?? e.message;
    });
    socket.on('close', () => {
      parse(true);
      finish(error === undefined ? { kind: 'closed' } : { kind: 'closed', error });
    });
    socket.write(data);
  });
}

type HeaderValue = string | Buffer; // a string is written as latin1 bytes, a Buffer as is

function buildRequest(
  method: string,
  target: string,
  headers: [string, HeaderValue][],
  body?: Buffer,
  opts: { chunks?: number[]; noHost?: boolean } = {},
): Buffer {
  const parts: Buffer[] = [Buffer.from(`${method} ${target} HTTP/1.1\r\n`, 'latin1')];
  if (!opts.noHost) parts.push(Buffer.from(`Host: 127.0.0.1:${port}\r\n`, 'latin1'));
  for (const [name, value] of headers) {
    parts.push(
      Buffer.from(`${name}: `, 'latin1'),
      typeof value === 'string' ? Buffer.from(value, 'latin1') : value,
      Buffer.from('\r\n'),
    );
  }
  if (body !== undefined && opts.chunks) {
    parts.push(Buffer.from('Transfer-Encoding: chunked\r\n\r\n'));
    let at = 0;
    for (const size of [...opts.chunks, Number.MAX_SAFE_INTEGER]) {
      const piece = body.subarray(at, at + size);
      at += piece.length;
      if (piece.length) parts.push(Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n'));
      if (at >= body.length) break;
    }
    parts.push(Buffer.from('0\r\n\r\n'));
  } else if (body !== undefined) {
    parts.push(Buffer.from(`Content-Length: ${body.length}\r\n\r\n`), body);
  } else {
    parts.push(Buffer.from('\r\n'));
  }
  return Buffer.concat(parts);
}

// ---------------------------------------------------------------------------
// The invariants every answer must keep.

const ALLOWED_5XX = new Set(['mapping_failed', 'overloaded']);

/** Checks the shape of one answer and returns its JSON body (undefined for HEAD). */
function checkAnswer(r: RawResponse, method: string, what: string): any {
  const where = `${what} -> ${r.status} ${JSON.stringify(r.body.toString('utf8').slice(0, 300))}`;
  assert.ok(r.status >= 200 && r.status < 600 && (r.status < 300 || r.status >= 400), `unexpected status: ${where}`);
  let json: any;
  if (method !== 'HEAD') {
    assert.ok(r.body.length > 0 || r.status === 204, `an answer without a JSON body: ${where}`);
  }
  if (r.body.length > 0 || method === 'HEAD') {
    assert.match(r.headers['content-type'] ?? '', /^application\/json/, `content-type: ${where}`);
  }
  if (r.body.length > 0) {
    try {
      json = JSON.parse(r.body.toString('utf8'));
    } catch {
      assert.fail(`the body is not JSON: ${where}`);
    }
    assert.equal(typeof json, 'object', where);
    assert.equal(typeof json.ok, 'boolean', `ok must be a boolean: ${where}`);
    if (r.status >= 400) {
      assert.equal(json.ok, false, where);
      assert.equal(typeof json.error, 'string', `error must be a string: ${where}`);
      assert.equal(typeof json.code, 'string', `code must be a string: ${where}`);
    } else {
      assert.equal(json.ok, true, where);
    }
  }
  if (r.status >= 500) {
    assert.ok(json !== undefined && ALLOWED_5XX.has(json.code), `a 5xx other than mapping_failed/overloaded: ${where}`);
  }
  if (r.status === 405) assert.ok(r.headers.allow, `405 without Allow: ${where}`);
  if (r.status === 429 || r.status === 503)
    assert.match(r.headers['retry-after'] ?? '', /^\d+$/, `Retry-After: ${where}`);
  return json;
}

async function send(
  data: Buffer,
  method: string,
  what: string,
): Promise<{ status: number; json: any; headers: Record<string, string> }> {
  const r = await rawRequest(data, { head: method === 'HEAD' });
  assert.equal(
    r.kind,
    'response',
    `the connection was closed without an answer (${r.kind === 'closed' ? r.error : ''}): ${what}`,
  );
  const { res } = r as { kind: 'response'; res: RawResponse };
  return { status: res.status, json: checkAnswer(res, method, what), headers: res.headers };
}

// ---------------------------------------------------------------------------
// An independent reading of schema/wake-payload.schema.json and schema/agent-payload.schema.json plus
// the gateway under test (channels: telegram only; no model allowlist; request session keys off).

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const codePoints = (s: string): number => [...s].length;
const notBlank = (v: unknown): boolean => typeof v === 'string' && /\S/u.test(v);
const optString = (v: unknown, min: number, max: number): boolean =>
  v === undefined || (typeof v === 'string' && codePoints(v) >= min && codePoints(v) <= max);
const has = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);
const CHANNELS = ['last', 'whatsapp', 'telegram', 'discord', 'slack', 'mattermost', 'signal', 'imessage', 'msteams'];
const AGENT_FIELDS = new Set([
  'message',
  'name',
  'agentId',
  'sessionKey',
  'wakeMode',
  'deliver',
  'channel',
  'to',
  'model',
  'thinking',
  'timeoutSeconds',
]);
const MODES = ['now', 'next-heartbeat'];

type Expected = { status: 200 | 202 } | { status: 400; code: string };

function expectWake(v: unknown): Expected {
  if (!isObject(v)) return { status: 400, code: 'invalid_json' };
  const keysOk = Object.keys(v).every((k) => k === 'text' || k === 'mode');
  const get = (k: string): unknown => (has(v, k) ? v[k] : undefined);
  const mode = get('mode');
  if (keysOk && notBlank(get('text')) && (mode === undefined || MODES.includes(mode as string))) return { status: 200 };
  return { status: 400, code: 'invalid_payload' };
}

function expectAgent(v: unknown): Expected {
  if (!isObject(v)) return { status: 400, code: 'invalid_json' };
  const get = (k: string): unknown => (has(v, k) ? v[k] : undefined);
  const t = get('timeoutSeconds');
  const schemaOk =
    Object.keys(v).every((k) => AGENT_FIELDS.has(k)) &&
    notBlank(get('message')) &&
    (get('name') === undefined || (notBlank(get('name')) && optString(get('name'), 1, 200))) &&
    optString(get('agentId'), 1, 128) &&
    optString(get('sessionKey'), 1, 512) &&
    (get('wakeMode') === undefined || MODES.includes(get('wakeMode') as string)) &&
    (get('deliver') === undefined || typeof get('deliver') === 'boolean') &&
    (get('channel') === undefined || CHANNELS.includes(get('channel') as string)) &&
    optString(get('to'), 1, 512) &&
    optString(get('model'), 1, 256) &&
    optString(get('thinking'), 1, 32) &&
    (t === undefined || (typeof t === 'number' && t > 0 && t <= 3600));
  if (!schemaOk) return { status: 400, code: 'invalid_payload' };
  if (get('sessionKey') !== undefined) return { status: 400, code: 'session_key_disabled' };
  const channel = get('channel');
  if (get('deliver') !== false && channel !== undefined && channel !== 'last' && channel !== 'telegram') {
    return { status: 400, code: 'invalid_payload' };
  }
  return { status: 202 };
}

/** What the gateway must answer to `body` posted with the right token, per the documented rules. */
function expectFor(endpoint: 'wake' | 'agent', body: Buffer): Expected | { status: 413; code: string } {
  if (body.length > MAX_BODY) return { status: 413, code: 'payload_too_large' };
  if (body.length === 0) return { status: 400, code: 'invalid_json' };
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return { status: 400, code: 'invalid_json' };
  }
  return endpoint === 'wake' ? expectWake(value) : expectAgent(value);
}

function assertExpected(
  got: { status: number; json: any },
  expected: { status: number; code?: string },
  endpoint: 'wake' | 'agent',
  what: string,
): void {
  const where = `${what} -> ${got.status} ${JSON.stringify(got.json)}`;
  if (got.status === 503 && got.json?.code === 'overloaded' && expected.status === 202) return;
  assert.equal(got.status, expected.status, where);
  if (expected.code !== undefined) assert.equal(got.json.code, expected.code, where);
  else if (endpoint === 'wake') assert.ok(MODES.includes(got.json.mode), where);
  else assert.match(got.json.runId, /^[0-9a-f-]{36}$/, where);
}

// ---------------------------------------------------------------------------
// Generators.

const endpointArb = fc.constantFrom<'wake' | 'agent'>('wake', 'agent');

const nastyStringArb = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.constantFrom(
    '',
    ' ',
    '\t\n',
    '\u00a0',
    '\u2028',
    '\u200b',
    '\ufeff',
    '\ud800',
    '\udfff',
    '\u0000',
    '__proto__',
    'constructor',
    'prototype',
    'toString',
    'hasOwnProperty',
    'valueOf',
    'main',
    'last',
    'telegram',
    'slack',
    'whatsapp',
    'now',
    'next-heartbeat',
    'NOW',
    'echo/echo',
    'x/y',
    '/',
    'hook:abc',
    '<<<EXTERNAL_UNTRUSTED_CONTENT id="0">>>',
    '<<<END_EXTERNAL_UNTRUSTED_CONTENT>>>',
    'HEARTBEAT_OK',
    'a'.repeat(32),
    'a'.repeat(33),
    'a'.repeat(200),
    'a'.repeat(201),
    'a'.repeat(512),
    'a'.repeat(513),
    '😀'.repeat(200),
    '😀'.repeat(201),
  ),
);

const fieldValueArb = fc.oneof(
  { arbitrary: nastyStringArb, weight: 4 },
  fc.double(),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom(0, -0, 1, 3600, 3600.5, 5e-324, -1, 1e308, Number.MAX_SAFE_INTEGER, 599.999),
  fc.jsonValue({ maxDepth: 2 }),
);

const fieldNameArb = fc.oneof(
  {
    arbitrary: fc.constantFrom(
      'text',
      'mode',
      'message',
      'name',
      'agentId',
      'wakeMode',
      'deliver',
      'channel',
      'to',
      'model',
      'thinking',
      'timeoutSeconds',
    ),
    weight: 8,
  },
  fc.constantFrom('sessionKey', '__proto__', 'constructor', 'prototype', 'toString', 'TEXT', 'text ', '', 'Message'),
  fc.string({ unit: 'grapheme', maxLength: 12 }),
);

/** Pairs written as a JSON object by hand; undefined values are left out. */
const objectText = (pairs: [string, unknown][]): string =>
  `{${pairs
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v) ?? 'null'}`)
    .join(',')}}`;

/** An object written as JSON text by hand: keys may repeat and may be "__proto__". */
const payloadTextArb = fc
  .array(fc.tuple(fieldNameArb, fieldValueArb), { maxLength: 6 })
  .map((pairs) => objectText(pairs));

/** `arb` in one case out of `outOf`, else undefined. */
const sometimes = <T>(arb: fc.Arbitrary<T>, outOf = 2): fc.Arbitrary<T | undefined> =>
  fc.oneof({ arbitrary: fc.constant(undefined), weight: outOf - 1 }, { arbitrary: arb, weight: 1 });
const mostly = <T>(good: fc.Arbitrary<T>): fc.Arbitrary<unknown> =>
  fc.oneof({ arbitrary: good, weight: 12 }, fieldValueArb);
/** A string the schemas accept (not blank, short), or now and then a nasty one. */
const textArb = fc.oneof(
  { arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }).filter((t) => /\S/u.test(t)), weight: 4 },
  nastyStringArb,
);
const extraFieldArb = sometimes(fc.tuple(fieldNameArb, fieldValueArb), 6);

/** Close to a valid wake payload: right field names, mostly the right types. */
const wakeShapedArb = fc
  .tuple(mostly(textArb), sometimes(mostly(fc.constantFrom('now', 'next-heartbeat'))), extraFieldArb)
  .map(([text, mode, extra]) => objectText([['text', text], ['mode', mode], ...(extra ? [extra] : [])]));

/** Close to a valid agent payload: a few of the optional fields, mostly with the right types. */
const agentFieldArb: fc.Arbitrary<[string, unknown]> = fc.oneof(
  mostly(textArb).map((v): [string, unknown] => ['name', v]),
  mostly(fc.oneof(fc.constantFrom('main', 'ops', 'MAIN', ' main '), textArb)).map((v): [string, unknown] => [
    'agentId',
    v,
  ]),
  mostly(fc.constantFrom('now', 'next-heartbeat')).map((v): [string, unknown] => ['wakeMode', v]),
  mostly(fc.boolean()).map((v): [string, unknown] => ['deliver', v]),
  mostly(fc.constantFrom(...CHANNELS)).map((v): [string, unknown] => ['channel', v]),
  mostly(textArb).map((v): [string, unknown] => ['to', v]),
  mostly(fc.constantFrom('echo/echo', 'echo/x', 'nope/x', 'echo', '/x')).map((v): [string, unknown] => ['model', v]),
  mostly(fc.constantFrom('low', 'high', 'x'.repeat(32), 'x'.repeat(33))).map((v): [string, unknown] => ['thinking', v]),
  mostly(fc.oneof(fc.double({ min: -1, max: 4000, noNaN: true }), fc.constantFrom(0.001, 1, 3600, 3600.001, 0))).map(
    (v): [string, unknown] => ['timeoutSeconds', v],
  ),
  // With a sessionKey the answer is always session_key_disabled, so it is sent now and then only.
  { arbitrary: textArb.map((v): [string, unknown] => ['sessionKey', v]), weight: 1 },
);
const agentShapedArb = fc
  .tuple(mostly(textArb), fc.array(agentFieldArb, { maxLength: 4 }), extraFieldArb)
  .map(([message, fields, extra]) => objectText([['message', message], ...fields, ...(extra ? [extra] : [])]));

const deep = (n: number, open: string, inner: string, close: string): string =>
  open.repeat(n) + inner + close.repeat(n);

const NASTY_BODIES: string[] = [
  '',
  ' ',
  '\n',
  'null',
  'true',
  '0',
  '-0',
  '1e309',
  '"text"',
  '[]',
  '[{"text":"x"}]',
  '{}',
  '{"text":"x"}{"text":"y"}',
  '{"text":"x"} trailing',
  '\ufeff{"text":"bom"}',
  '\n\t {"text":"whitespace around"} \r\n',
  "{'text':'single quotes'}",
  '{text:"json5"}',
  '{"text":"x",}',
  '{"text":"x" /* comment */}',
  '{"text":"\\ud800 lone surrogate"}',
  '{"text":"\\u0000nul"}',
  '{"text":"x","mode":"now","mode":"bogus"}',
  '{"text":"","text":"second wins"}',
  '{"text":"x","__proto__":{"mode":"now"}}',
  '{"__proto__":{"text":"inherited"}}',
  '{"text":"x","constructor":{"prototype":{"polluted":true}}}',
  '{"message":"m","__proto__":null}',
  '{"text":1e309}',
  '{"message":"m","timeoutSeconds":1e309}',
  '{"message":"m","timeoutSeconds":-1e309}',
  '{"message":"m","timeoutSeconds":-0}',
  '{"message":"m","timeoutSeconds":5e-324,"deliver":false}',
  '{"message":"m","timeoutSeconds":3600.0000000000001,"deliver":false}',
  '{"message":"m","timeoutSeconds":1e-7,"deliver":false}',
  '{"text":123456789012345678901234567890}',
  '{"text":"x","mode":null}',
  '{"message":"m","channel":"telegram","to":"\\u202e"}',
  '{"message":"m","channel":"slack"}',
  '{"message":"m","channel":"slack","deliver":false}',
  '{"message":"m","agentId":"__proto__","deliver":false}',
  '{"message":"m","agentId":"constructor","model":"__proto__/x","deliver":false}',
  '{"message":"m","model":"toString/valueOf","deliver":false}',
  '{"message":"m","sessionKey":"hook:x"}',
  '{"message":"m","name":"   "}',
  deep(10_000, '[', '', ']'),
  '['.repeat(10_000),
  '{'.repeat(10_000),
  deep(10_000, '{"a":', '1', '}'),
  `{"text":${deep(10_000, '[', '', ']')}}`,
  `{"message":"m","to":${deep(10_000, '{"__proto__":', 'null', '}')}}`,
  deep(60_000, '[', '"x"', ']'),
  `{"text":"${'\\u0041'.repeat(40_000)}"}`,
  `{"text":"${'😀'.repeat(60_000)}"}`, // 240 KB: under the limit
  `{"text":"${'x'.repeat(MAX_BODY)}"}`, // just over the limit
];

const INVALID_UTF8: Buffer[] = [
  Buffer.from('{"text":"\xff\xfe"}', 'latin1'),
  Buffer.from('{"text":"\xc0\xaf overlong"}', 'latin1'),
  Buffer.from('{"text":"\xed\xa0\x80 cesu surrogate"}', 'latin1'),
  Buffer.from('{"message":"\xf8\x88\x80\x80\x80","deliver":false}', 'latin1'),
  Buffer.from('{"te\xffxt":"bad key"}', 'latin1'),
  Buffer.from('\xff\xfe{\x00"\x00', 'latin1'),
  Buffer.from([0x7b, 0x22, 0x74, 0x65, 0x78, 0x74, 0x22, 0x3a, 0x22, 0xe2, 0x82]), // cut inside a character
];

const bodyBytesArb: fc.Arbitrary<Buffer> = fc.oneof(
  { arbitrary: fc.constantFrom(...NASTY_BODIES).map((s) => Buffer.from(s, 'utf8')), weight: 3 },
  fc.constantFrom(...INVALID_UTF8),
  fc.string({ unit: 'binary', maxLength: 300 }).map((s) => Buffer.from(s, 'utf8')),
  fc.string({ unit: 'grapheme', maxLength: 300 }).map((s) => Buffer.from(`{"text":${JSON.stringify(s)}}`, 'utf8')),
  fc.uint8Array({ maxLength: 600 }).map((a) => Buffer.from(a)),
  fc.json({ maxDepth: 4 }).map((s) => Buffer.from(s, 'utf8')),
  payloadTextArb.map((s) => Buffer.from(s, 'utf8')),
  wakeShapedArb.map((s) => Buffer.from(s, 'utf8')),
  agentShapedArb.map((s) => Buffer.from(s, 'utf8')),
);

const contentTypeArb = fc.option(
  fc.oneof(
    fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'application/json; charset=utf-16',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=----x',
      'application/octet-stream',
      '',
      '*/*',
      'application/json, text/plain',
      'application/xml',
    ),
    fc.string({ unit: 'grapheme-ascii', maxLength: 60 }),
  ),
  { nil: undefined },
);

/** Chunk sizes for a chunked upload, or undefined for Content-Length. */
const framingArb = fc.option(fc.array(fc.integer({ min: 1, max: 4096 }), { minLength: 1, maxLength: 8 }), {
  nil: undefined,
});

const bearer = (token: string): [string, string] => ['Authorization', `Bearer ${token}`];

// ---------------------------------------------------------------------------
// Properties.

test('fuzz: JSON values and payload-shaped objects posted to /hooks/wake and /hooks/agent', async () => {
  const valueTextArb = fc.oneof(
    fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
    payloadTextArb,
    { arbitrary: wakeShapedArb, weight: 2 },
    { arbitrary: agentShapedArb, weight: 2 },
  );
  await fc.assert(
    fc.asyncProperty(endpointArb, valueTextArb, async (endpoint, text) => {
      const what = `POST /hooks/${endpoint} ${text.slice(0, 200)}`;
      const res = await fetch(`${gw.url}/hooks/${endpoint}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json' },
        body: text,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const raw: RawResponse = {
        status: res.status,
        headers: Object.fromEntries(res.headers.entries()),
        body: Buffer.from(await res.arrayBuffer()),
      };
      const json = checkAnswer(raw, 'POST', what);
      assert.ok(raw.headers['x-request-id'], `x-request-id: ${what}`);
      assertExpected({ status: raw.status, json }, expectFor(endpoint, Buffer.from(text, 'utf8')), endpoint, what);
    }),
    { numRuns: RUNS, seed: 0x5eed_0001 },
  );
});

test('every hand-picked hostile body, on both endpoints, with Content-Length and chunked', async () => {
  for (const body of [...NASTY_BODIES.map((t) => Buffer.from(t, 'utf8')), ...INVALID_UTF8]) {
    for (const endpoint of ['wake', 'agent'] as const) {
      for (const chunks of [undefined, [1, 7, 4096]]) {
        const what = `POST /hooks/${endpoint} (${chunks ? 'chunked' : 'length'}) ${JSON.stringify(body.toString('latin1').slice(0, 120))}…${body.length} bytes`;
        const expected = expectFor(endpoint, body);
        const r = await rawRequest(buildRequest('POST', `/hooks/${endpoint}`, [bearer(HOOK_TOKEN)], body, { chunks }));
        if (r.kind === 'closed') {
          assert.equal(expected.status, 413, `closed without an answer (${r.error}): ${what}`);
          continue;
        }
        assertExpected({ status: r.res.status, json: checkAnswer(r.res, 'POST', what) }, expected, endpoint, what);
      }
    }
  }
});

test('fuzz: arbitrary strings and bytes as bodies, any content type, Content-Length or chunked', async () => {
  await fc.assert(
    fc.asyncProperty(endpointArb, bodyBytesArb, contentTypeArb, framingArb, async (endpoint, body, type, chunks) => {
      const headers: [string, string][] = [bearer(HOOK_TOKEN)];
      if (type !== undefined) headers.push(['Content-Type', type]);
      const what = `POST /hooks/${endpoint} (${chunks ? 'chunked' : 'length'}, ${type}) ${JSON.stringify(body.toString('latin1').slice(0, 120))}…${body.length} bytes`;
      const expected = expectFor(endpoint, body);
      const r = await rawRequest(buildRequest('POST', `/hooks/${endpoint}`, headers, body, { chunks }));
      if (r.kind === 'closed') {
        // Only an over-limit upload may be cut off (the 413 can be lost to a reset while we still write).
        assert.equal(expected.status, 413, `closed without an answer (${r.error}): ${what}`);
        return;
      }
      const json = checkAnswer(r.res, 'POST', what);
      assertExpected({ status: r.res.status, json }, expected, endpoint, what);
    }),
    { numRuns: RUNS, seed: 0x5eed_0002 },
  );
});

// Header values hold what HTTP allows in a field value: HTAB, SP, visible ASCII and obs-text bytes
// (UTF-8 for unicode). Control characters, DEL, CR/LF and NUL are left out here: Node's parser refuses
// them with a bare, non-JSON 400 (reported as a bug); the garbage property below covers them.
const headerTextArb = fc.oneof(
  fc.string({ unit: 'grapheme-ascii', maxLength: 80 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: fc.constantFrom(' ', '\t', 'a', '=', ',', ';', '"', '\u00a0', '\u00e9', '\u00ff'), maxLength: 40 }),
  fc.integer({ min: 1000, max: 4000 }).map((n) => 'A'.repeat(n)),
);

function headerBytes(s: string): Buffer {
  // Unicode goes on the wire as UTF-8; latin1-only text as latin1 (so \u00a0 is the single obs-text byte).
  return /[^\u0000-\u00ff]/.test(s) ? Buffer.from(s, 'utf8') : Buffer.from(s, 'latin1');
}

const tokenishArb = fc.oneof(
  fc.constantFrom(
    HOOK_TOKEN,
    ` ${HOOK_TOKEN}`,
    `${HOOK_TOKEN} `,
    `\t${HOOK_TOKEN}\t`,
    HOOK_TOKEN.slice(0, -1),
    `${HOOK_TOKEN}x`,
    `x${HOOK_TOKEN}`,
    HOOK_TOKEN.toUpperCase(),
    `${HOOK_TOKEN}, ${HOOK_TOKEN}`,
    `"${HOOK_TOKEN}"`,
    GATEWAY_TOKEN,
    '',
    ' ',
    'null',
    'undefined',
  ),
  headerTextArb,
);
const schemeArb = fc.constantFrom(
  'Bearer',
  'bearer',
  'BEARER',
  'BeArEr',
  'Basic',
  'Token',
  'Bearer:',
  'Bearerx',
  'Digest',
  '',
  'Bearer,',
);
const sepArb = fc.constantFrom(' ', '  ', '\t', '', ' \t ');

const authValueArb = fc.oneof(
  fc.tuple(schemeArb, sepArb, tokenishArb).map(([scheme, sep, token]) => `${scheme}${sep}${token}`),
  fc.constantFrom(`Bearer ${HOOK_TOKEN}`, `bearer\t${HOOK_TOKEN}`, `BEARER   ${HOOK_TOKEN}  `),
);
const headerNameArb = fc.stringMatching(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,20}$/);

const headerSetArb = fc.record({
  authorization: fc.array(authValueArb, { maxLength: 3 }),
  serviceToken: fc.array(tokenishArb, { maxLength: 2 }),
  contentType: fc.array(
    fc.oneof(
      contentTypeArb.map((t) => t ?? 'application/json'),
      headerTextArb,
    ),
    { maxLength: 2 },
  ),
  forwardedFor: fc.option(
    fc.oneof(
      fc.ipV4(),
      fc.ipV6(),
      headerTextArb,
      fc.constantFrom('unknown', '127.0.0.1, 10.0.0.1', ',,,', '::ffff:1.2.3.4'),
    ),
    { nil: undefined },
  ),
  extra: fc.array(fc.tuple(headerNameArb, headerTextArb), { maxLength: 3 }),
  nameCase: fc.constantFrom('lower', 'canonical', 'upper'),
});

test('fuzz: random Authorization, x-service-token, content-type and repeated headers', async () => {
  const body = Buffer.from('{"text":"header fuzz","mode":"next-heartbeat"}');
  await fc.assert(
    fc.asyncProperty(
      headerSetArb,
      fc.shuffledSubarray([0, 1, 2, 3, 4], { minLength: 5, maxLength: 5 }),
      async (h, order) => {
        const name = (n: string): string =>
          h.nameCase === 'lower' ? n.toLowerCase() : h.nameCase === 'upper' ? n.toUpperCase() : n;
        const groups: [string, string][][] = [
          h.authorization.map((v) => [name('Authorization'), v]),
          h.serviceToken.map((v) => [name('X-Service-Token'), v]),
          h.contentType.map((v) => [name('Content-Type'), v]),
          h.forwardedFor === undefined ? [] : [[name('X-Forwarded-For'), h.forwardedFor]],
          // Names the gateway reads itself must not be repeated by accident (a second Content-Length is
          // refused by Node's parser with a non-JSON 400, reported separately).
          h.extra.filter(
            ([n]) =>
              !/^(content-length|transfer-encoding|host|authorization|x-service-token|expect|connection|upgrade)$/i.test(
                n,
              ),
          ),
        ];
        const headers = order.flatMap((i) => groups[i]!).map(([n, v]): [string, HeaderValue] => [n, headerBytes(v)]);
        // Node refuses a header section over 16 KB with a bare 431 (see the garbage property).
        fc.pre(headers.reduce((n, [k, v]) => n + k.length + v.length + 4, 0) < 14_000);
        const what = `headers ${JSON.stringify(headers.map(([n, v]) => [n, v.toString('latin1').slice(0, 80)]))}`;
        const got = await send(buildRequest('POST', '/hooks/wake', headers, body), 'POST', what);

        // What the documented token carriers allow us to predict. A candidate is what a carrier holds:
        // `Bearer <t>` (scheme in any case, then blanks) or an x-service-token value, blanks around it
        // trimmed. The request may only succeed when some candidate is exactly the token.
        const wire = (v: string): string =>
          headerBytes(v)
            .toString('latin1')
            .replace(/^[ \t]+|[ \t]+$/g, '');
        const bearerOf = (v: string): string | undefined => /^bearer[ \t]+(.*)$/is.exec(wire(v))?.[1]?.trim();
        const candidates = [...h.authorization.map(bearerOf), ...h.serviceToken.map((v) => wire(v).trim())];
        const exact = candidates.includes(HOOK_TOKEN);
        const cleanBearer = h.authorization.length === 1 && h.serviceToken.length === 0 && exact;
        const cleanService = h.authorization.length === 0 && h.serviceToken.length === 1 && exact;
        const explain = `${what} -> ${got.status} ${JSON.stringify(got.json)}`;
        if (!exact) {
          assert.equal(got.status, 401, `no carrier held exactly the token, yet: ${explain}`);
          assert.equal(got.json.code, 'unauthorized', explain);
        } else if (cleanBearer || cleanService) {
          assert.equal(got.status, 200, `the right token in the only carrier: ${explain}`);
        } else {
          assert.ok(got.status === 200 || got.status === 401, explain);
        }
        assert.ok(got.headers['x-request-id'], what);
      },
    ),
    { numRuns: RUNS, seed: 0x5eed_0003 },
  );
});

// Request targets are written as they would arrive from a hostile client: no normalisation. Only the
// characters Node's parser accepts in a request target are used (visible ASCII except "#"); unicode
// is percent-encoded as a browser would. Raw non-ASCII bytes in the target get Node's bare 400
// (reported as a bug; covered by the garbage property).
const segmentArb = fc.oneof(
  fc.constantFrom(
    'wake',
    'agent',
    'WAKE',
    'Wake',
    '%77ake',
    'wake%00',
    'wake%2F',
    'wake.json',
    'wake;x',
    '..',
    '.',
    '',
    '%2e%2e',
    '%2E',
    '%2f',
    '%00',
    '%ff',
    '%',
    '%zz',
    'api',
    'hooks',
    '~',
    '*',
    '@',
    ':',
  ),
  fc.string({ unit: 'grapheme', maxLength: 20 }).map((s) => encodeURIComponent(s)),
  fc.stringMatching(/^[A-Za-z0-9._~!$&'()*+,;=:@%-]{0,30}$/),
);
const longSegmentArb = fc.integer({ min: 1000, max: 7000 }).map((n) => 'x'.repeat(n));
const baseArb = fc.constantFrom(
  '/hooks',
  '/hooks',
  '/hooks',
  '/HOOKS',
  '/Hooks',
  '//hooks',
  '/hooksx',
  '/hook',
  '/%68ooks',
  '/./hooks',
  '/hooks%2Fwake',
  '/api',
  '/api/',
  '/',
  '/elsewhere',
  '/api/sessions',
  '/api/outbox',
);
const queryPartArb = fc
  .tuple(
    fc.constantFrom(
      'token',
      'token',
      'Token',
      'TOKEN',
      '%74oken',
      'tok%65n',
      'token[]',
      'tokens',
      'x',
      'a',
      'access_token',
      '',
      'to+ken',
      encodeURIComponent('tökén'),
    ),
    fc.option(
      fc.oneof(
        fc.constantFrom(HOOK_TOKEN, '', 'x', '%', '%zz', '=', '&'),
        fc.stringMatching(/^[A-Za-z0-9._~%-]{0,20}$/),
      ),
      { nil: undefined },
    ),
  )
  .map(([k, v]) => (v === undefined ? k : `${k}=${v}`));
const queryArb = fc.option(
  fc
    .tuple(fc.array(queryPartArb, { maxLength: 4 }), fc.constantFrom('&', ';', '&&'))
    .map(([parts, sep]) => `?${parts.join(sep)}`),
  { nil: undefined },
);
const methodArb = fc.constantFrom('GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'POST', 'POST', 'HEAD');

test('fuzz: random paths under /hooks (encodings, "..", "//", long, unicode), query strings and methods', async () => {
  const wakeBody = Buffer.from('{"text":"path fuzz","mode":"next-heartbeat"}');
  await fc.assert(
    fc.asyncProperty(
      baseArb,
      fc.oneof(fc.array(segmentArb, { maxLength: 4 }), fc.constantFrom(['wake'], ['agent'], ['wake', ''], [''])),
      fc.option(fc.tuple(fc.nat(4), longSegmentArb), { nil: undefined, freq: 8 }),
      queryArb,
      methodArb,
      fc.constantFrom<'right' | 'wrong' | 'none'>('right', 'right', 'wrong', 'none'),
      fc.boolean(),
      async (base, segments, long, query, method, token, withBody) => {
        const segs = [...segments];
        if (long) segs.splice(long[0], 0, long[1]);
        let target = base + segs.map((s) => `/${s}`).join('') + (query ?? '');
        if (!target.startsWith('/')) target = `/${target}`;
        const headers: [string, string][] = [];
        if (token === 'right') headers.push(bearer(HOOK_TOKEN));
        if (token === 'wrong') headers.push(bearer(`${HOOK_TOKEN}-wrong`));
        const what = `${method} ${target.slice(0, 300)} (token ${token})`;
        const got = await send(buildRequest(method, target, headers, withBody ? wakeBody : undefined), method, what);

        const q = target.indexOf('?');
        const pathname = q < 0 ? target : target.slice(0, q);
        const explain = `${what} -> ${got.status} ${JSON.stringify(got.json)}`;
        if (pathname === '/hooks' || pathname.startsWith('/hooks/')) {
          const code = (c: string): void => {
            if (method !== 'HEAD') assert.equal(got.json.code, c, explain);
          };
          assert.ok(got.headers['x-request-id'], explain);
          if (q >= 0 && new URLSearchParams(target.slice(q + 1)).has('token')) {
            assert.equal(got.status, 400, explain);
            code('token_in_query');
          } else if (method !== 'POST') {
            assert.equal(got.status, 405, explain);
            assert.equal(got.headers.allow, 'POST', explain);
            code('method_not_allowed');
          } else if (token !== 'right') {
            assert.equal(got.status, 401, explain);
            code('unauthorized');
          } else if (pathname === '/hooks/wake') {
            assert.equal(got.status, withBody ? 200 : 400, explain);
          } else if (pathname === '/hooks/agent') {
            assert.equal(got.status, 400, explain); // a wake body, or none, is not an agent payload
          } else {
            assert.equal(got.status, 404, explain);
            code('not_found');
          }
        } else if (target.startsWith('/api/')) {
          // The admin API: no gateway token here, so never a 2xx.
          assert.ok([401, 404, 405, 429].includes(got.status), explain);
        } else {
          assert.equal(got.status, 404, explain);
          if (method !== 'HEAD') assert.equal(got.json.code, 'not_found', explain);
        }
      },
    ),
    { numRuns: RUNS, seed: 0x5eed_0004 },
  );
});

test('fuzz: every method on /hooks/wake and /hooks/agent with the right token', async () => {
  await fc.assert(
    fc.asyncProperty(methodArb, endpointArb, fc.boolean(), async (method, endpoint, withBody) => {
      const body = Buffer.from(
        endpoint === 'wake'
          ? '{"text":"method fuzz","mode":"next-heartbeat"}'
          : '{"message":"method fuzz","deliver":false}',
      );
      const what = `${method} /hooks/${endpoint} body=${withBody}`;
      const got = await send(
        buildRequest(method, `/hooks/${endpoint}`, [bearer(HOOK_TOKEN)], withBody ? body : undefined),
        method,
        what,
      );
      if (method === 'POST') assert.equal(got.status, withBody ? (endpoint === 'wake' ? 200 : 202) : 400, what);
      else {
        assert.equal(got.status, 405, what);
        assert.equal(got.headers.allow, 'POST', what);
      }
    }),
    { numRuns: 120, seed: 0x5eed_0005 },
  );
});

// Requests that are not valid HTTP/1.1. Node's parser refuses most of them before any handler runs;
// the gateway's clientError/checkExpectation handlers still answer in the JSON error shape. Required:
// a JSON 4xx or a closed connection, never a 2xx or 5xx, and the process survives.
const controlCharArb = fc.constantFrom('\x00', '\x01', '\x07', '\x0b', '\x0c', '\x1b', '\x7f', '\r', '\n');
const garbageArb = fc.oneof(
  // a control character inside a header value
  fc
    .tuple(controlCharArb, fc.constantFrom('Authorization', 'X-Service-Token', 'Content-Type', 'X-Anything'))
    .map(
      ([c, h]) =>
        `POST /hooks/wake HTTP/1.1\r\nHost: h\r\n${h}: Bearer ${HOOK_TOKEN.slice(0, 5)}${c}x\r\nContent-Length: 2\r\n\r\n{}`,
    ),
  // raw (unencoded) bytes in the request target
  fc
    .string({ unit: 'grapheme', minLength: 1, maxLength: 10 })
    .map((s) => `POST /hooks/${s} HTTP/1.1\r\nHost: h\r\n\r\n`),
  controlCharArb.map((c) => `POST /hooks/w${c}ke HTTP/1.1\r\nHost: h\r\n\r\n`),
  // bad methods and versions
  fc
    .constantFrom('FOO', 'G T', 'get', 'PoSt', 'POST\t', 'BREW', '', 'M-SEARCH')
    .map((m) => `${m} /hooks/wake HTTP/1.1\r\nHost: h\r\n\r\n`),
  fc
    .constantFrom('HTTP/2.0', 'HTTP/1.2', 'HTTP/9.9', 'HTTP/1', 'HTTPS/1.1', 'http/1.1', '')
    .map((v) => `POST /hooks/wake ${v}\r\nHost: h\r\n\r\n`),
  // framing conflicts and malformed framing
  fc.constantFrom(
    `POST /hooks/wake HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}`,
    `POST /hooks/wake HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}`,
    `POST /hooks/wake HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    `POST /hooks/wake HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n`,
    `POST /hooks/wake HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n`,
    `POST /hooks/wake HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n`,
    `POST /hooks/wake HTTP/1.1\r\nHost: h\r\nContent-Length: 1e3\r\n\r\n`,
    `POST /hooks/wake HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999999\r\n\r\n`,
    `POST /hooks/wake HTTP/1.1\r\nHost: h\r\nContent-Length: 0x10\r\n\r\n`,
    `POST /hooks/wake HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
    `POST /hooks/wake HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n\r\n`,
    `POST /hooks/wake HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n\r\n`,
    `POST /hooks/wake HTTP/1.1\r\nAuthorization: Bearer ${HOOK_TOKEN}\r\nContent-Length: 2\r\n\r\n{}`, // no Host
    `POST /hooks/wake HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n`,
    `POST /hooks/wake HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer\r\n ${HOOK_TOKEN}\r\n\r\n`, // obsolete line folding
    `POST /hooks/wake HTTP/1.1\r\nHost: h\r\nAuthorization : Bearer ${HOOK_TOKEN}\r\n\r\n`,
    `POST /hooks/wake HTTP/1.1\r\nHost: h\r\nno colon here\r\n\r\n`,
    `POST /hooks/wake HTTP/1.1\r\nHost: h\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    `POST /hooks/wake HTTP/1.1\r\nHost: h\r\n${Array.from({ length: 3000 }, (_, i) => `X-H${i}: v`).join('\r\n')}\r\n\r\n`,
    `POST /hooks/${'a'.repeat(20_000)} HTTP/1.1\r\nHost: h\r\n\r\n`,
    `POST /hooks/wake HTTP/1.1\r\nHost: h\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n{}`,
    `POST /hooks/wake HTTP/1.1\nHost: h\nContent-Length: 2\n\n{}`,
    `POST  /hooks/wake  HTTP/1.1\r\nHost: h\r\n\r\n`,
    `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`,
    `\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n`, // a TLS ClientHello
    `GET /hooks/wake\r\n\r\n`,
  ),
);

test('fuzz: requests that are not valid HTTP get a 4xx or a closed connection, never a 2xx or 5xx', async () => {
  await fc.assert(
    fc.asyncProperty(garbageArb, async (text) => {
      const what = JSON.stringify(text.slice(0, 200));
      const r = await rawRequest(Buffer.from(text, text.includes('\x16\x03') ? 'latin1' : 'utf8'), {
        timeoutMs: REQUEST_TIMEOUT_MS,
      });
      if (r.kind === 'closed') return;
      assert.ok(r.res.status >= 400 && r.res.status < 500, `${what} -> ${r.res.status}`);
      checkAnswer(r.res, 'POST', what);
    }),
    { numRuns: 150, seed: 0x5eed_0006 },
  );
});

test('after the fuzzing the process is alive, logged no internal error, and a normal wake is 200', async () => {
  assert.equal(gw.child.exitCode, null);
  assert.equal(gw.child.signalCode, null);
  const r = await gw.hook('/hooks/wake', { text: 'still alive after fuzzing' });
  assert.deepEqual(r, { status: 200, body: { ok: true, mode: 'now' } });
  const agent = await gw.hook('/hooks/agent', { message: 'still alive', deliver: false });
  assert.equal(agent.status, 202);
  const errors = gw
    .output()
    .split('\n')
    .filter((line) => line.includes('"level":"error"'));
  assert.deepEqual(errors, []);
});

test('a body with tens of thousands of unknown keys gets a short 400 naming its first problem only', async () => {
  const keys = Array.from({ length: 24_000 }, (_, i) => `"${i}":0`).join(',');
  const res = await fetch(`${gw.url}/hooks/wake`, {
    method: 'POST',
    headers: { authorization: `Bearer ${HOOK_TOKEN}` },
    body: `{${keys}}`,
  });
  const text = await res.text();
  assert.equal(res.status, 400);
  const body = JSON.parse(text);
  assert.equal(body.code, 'invalid_payload');
  assert.doesNotMatch(body.error, /; |more problems/);
  assert.ok(text.length < 200, `the error is ${text.length} bytes long`);
});
