// The shared redactor of known secrets: every form a peer may echo one in is masked (as given, any
// letter case, URL-encoded, JSON-escaped, base64 and base64url at each of the three alignments inside
// a longer text, with zero-width characters inside), and ordinary text is left alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cachedRedactor, SecretRedactor } from '../../../plugin/util/secret-redactor.ts';

const SECRET = 'xoxb-1234/Secret+Value"abcdefghij';
const redactor = new SecretRedactor([SECRET]);

test('every form is masked', () => {
  const cases: Record<string, string> = {
    'as given': SECRET,
    'upper case': SECRET.toUpperCase(),
    'lower case': SECRET.toLowerCase(),
    'URL-encoded': encodeURIComponent(SECRET),
    'URL-encoded, lower-case hex': encodeURIComponent(SECRET).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()),
    'form-encoded': new URLSearchParams({ s: SECRET }).toString().slice(2),
    'JSON-escaped': JSON.stringify(SECRET).slice(1, -1),
    'JSON-escaped with \\/': JSON.stringify(SECRET).slice(1, -1).replaceAll('/', '\\/'),
    'zero-width spaces': [...SECRET].join('\u200b'),
    'zero-width joiners and word joiners': [...SECRET].join('\u200d\u2060'),
    base64: Buffer.from(SECRET).toString('base64'),
    base64url: Buffer.from(SECRET).toString('base64url'),
  };
  for (const [name, form] of Object.entries(cases)) {
    const out = redactor.redact(`before ${form} after`);
    assert.match(out, /^before \[redacted\]\S{0,3} after$/, `${name}: ${out}`);
  }
});

test('base64 of a longer text is masked whatever the offset the secret starts at', () => {
  for (const prefix of ['', 'a', 'ab', 'abc', 'user:', '{"token":"']) {
    for (const encoding of ['base64', 'base64url'] as const) {
      const encoded = Buffer.from(`${prefix}${SECRET} and more after it`).toString(encoding);
      const out = redactor.redact(encoded);
      assert.match(out, /\[redacted\]/, `${encoding} after ${JSON.stringify(prefix)}`);
      // What is left around the mask cannot hold the secret: at most the encoding of its neighbours.
      const rest = out.split('[redacted]').join('');
      assert.ok(rest.length <= encoded.length - Buffer.from(SECRET).length, out);
    }
  }
});

test('ordinary text, short values and the empty list leave the text as it is', () => {
  const text = 'HTTP 400: Bad Request: chat not found (retry after 3 s) — ünïcödé İstanbul';
  assert.equal(redactor.redact(text), text);
  assert.equal(new SecretRedactor(['abc', '']).redact('abc is fine'), 'abc is fine');
  assert.equal(new SecretRedactor([]).redact(text), text);
  assert.equal(new SecretRedactor([]).empty, true);
});

test('a secret holding another is masked whole; several in one text are all masked', () => {
  const r = new SecretRedactor(['token-0123456789', 'token-0123456789-extended']);
  assert.equal(r.redact('a token-0123456789-extended b'), 'a [redacted] b');
  assert.equal(r.redact('TOKEN-0123456789 and token-0123456789-EXTENDED'), '[redacted] and [redacted]');
});

test('characters whose lower case is longer do not shift the mask', () => {
  const text = `İİİ ${SECRET.toUpperCase()} İ`;
  assert.equal(redactor.redact(text), 'İİİ [redacted] İ');
});

test('the cached redactor follows its list', () => {
  let list = ['first-secret-0123'];
  const redact = cachedRedactor(() => list);
  assert.equal(redact('x first-secret-0123'), 'x [redacted]');
  list = ['second-secret-0123'];
  assert.equal(redact('x first-secret-0123 second-secret-0123'), 'x first-secret-0123 [redacted]');
});
