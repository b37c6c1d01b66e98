// Small helpers every kind of test uses: waiting, and checking a JSON error answer.
import assert from 'node:assert/strict';

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Polls cond (which may be async) every 5 ms; rejects naming what it waited for once timeoutMs has
 * passed. The timeout only ends a wait that failed, so it is generous for a busy machine.
 */
export function waitUntil(cond: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + timeoutMs;
    const tick = async (): Promise<void> => {
      try {
        if (await cond()) return resolve();
      } catch (err) {
        return reject(err as Error);
      }
      if (Date.now() > deadline) reject(new Error(`timed out waiting for: ${what}`));
      else setTimeout(() => void tick(), 5);
    };
    void tick();
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
