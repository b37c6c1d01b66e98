// Small helpers every kind of test uses: waiting, and checking a JSON error answer.
import assert from 'node:assert/strict';

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls cond every 5 ms; rejects naming what it waited for once timeoutMs has passed. */
export function waitUntil(cond: () => boolean, what: string, timeoutMs = 3000): Promise<void> {
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + timeoutMs;
    const tick = (): void => {
      if (cond()) resolve();
      else if (Date.now() > deadline) reject(new Error(`timed out waiting for: ${what}`));
      else setTimeout(tick, 5);
    };
    tick();
  });
}

export interface JsonAnswer {
  status: number;
  headers?: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: answers are read field by field in assertions
  body: any;
}

/** A JSON error answer in the one shape every error has: { ok: false, error, code }. */
export function assertError(r: JsonAnswer, status: number, code: string, message?: RegExp): void {
  assert.equal(r.status, status, JSON.stringify(r.body));
  if (r.headers) assert.match(r.headers.get('content-type') ?? '', /^application\/json; charset=utf-8/);
  assert.equal(r.body.ok, false);
  assert.equal(r.body.code, code);
  assert.equal(typeof r.body.error, 'string');
  assert.ok(r.body.error.length > 5, 'the error is a sentence');
  if (message) assert.match(r.body.error, message);
}
