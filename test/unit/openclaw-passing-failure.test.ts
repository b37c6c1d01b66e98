// Which failures of OpenClaw runs and channel sends hookgate tries again. The run sentences are
// OpenClaw's own (openclaw 2026.9.6, captured from a real gateway whose fake model answered 503, 429,
// 400 and dropped the connection; test-openclaw/after-the-200.ts checks 503 and 400 there each run).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { classifyDeliveryError, classifyRunError } from '../../plugin/hosts/openclaw/passing-failure.ts';
import { toTurnResult } from '../../plugin/hosts/openclaw/turns.ts';

test("OpenClaw's sentences for an overloaded, rate-limited, failing or unreachable provider may pass", () => {
  for (const sentence of [
    'The AI service is temporarily overloaded. Please try again in a moment.',
    '⚠️ Selected model is at capacity. Try a different model, or wait and retry.',
    '⚠️ API rate limit reached. Please try again later.',
    '⚠️ The model request was rate-limited. Please try again in a few minutes.',
    '⚠️ All attempted models were rate-limited or overloaded. Please try again in a few minutes.',
    '⚠️ The model provider returned HTTP 429 before replying. This can mean rate limiting, exhausted quota, or an account balance/billing issue.',
    'LLM request failed: provider returned an internal error.',
    'LLM request failed: network connection error.',
    'LLM request timed out.',
    '⚠️ fake/m1 request failed (provider internal error, HTTP 503). This is usually temporary — try again shortly.',
    '⚠️ fake/m1 request failed (rate limited, HTTP 429). This is usually temporary — try again shortly.',
    '⚠️ LLM request failed (HTTP 502).',
  ])
    assert.deepEqual(classifyRunError(sentence), { retryable: true }, sentence);
});

test('a rate limit with its announced cooldown gives the wait', () => {
  assert.deepEqual(classifyRunError('⚠️ Rate-limited — ready in ~45s. Please wait a moment.'), {
    retryable: true,
    retryAfterMs: 45_000,
  });
  assert.deepEqual(classifyRunError('⚠️ Rate-limited — ready in ~3 min. Please try again shortly.'), {
    retryable: true,
    retryAfterMs: 180_000,
  });
});

test('a refused request, a billing or auth problem, or no error at all does not pass', () => {
  for (const sentence of [
    'LLM request failed: provider rejected the request schema or tool payload.',
    'Authentication failed (provider returned HTTP 401). Your provider token may have expired',
    '⚠️ API provider returned a billing error — your API key has run out of credits',
    'The selected model was not found by the provider. Check the model id or choose a different model.',
    'Context overflow: prompt too large for the model.',
    '⚠️ fake/m1 request failed (authentication failed, HTTP 401). Re-authenticate the provider and try again.',
    '⚠️ fake/m1 request failed (request format rejected, HTTP 400).',
    undefined,
    '',
  ])
    assert.deepEqual(classifyRunError(sentence), { retryable: false }, String(sentence));
});

test("a run's TurnResult carries retryable and the wait only for an error that may pass", () => {
  assert.deepEqual(toTurnResult({ status: 'error', error: '⚠️ Rate-limited — ready in ~10s. Please wait a moment.' }), {
    status: 'error',
    error: '⚠️ Rate-limited — ready in ~10s. Please wait a moment.',
    retryable: true,
    retryAfterMs: 10_000,
  });
  const refused = 'LLM request failed: provider rejected the request schema or tool payload.';
  assert.deepEqual(toTurnResult({ status: 'error', error: refused }), { status: 'error', error: refused });
  // A run OpenClaw did not finish in time is a timeout, never retried.
  assert.deepEqual(toTurnResult({ status: 'timeout', error: 'LLM request timed out.' }), {
    status: 'timeout',
    error: 'LLM request timed out.',
  });
});

test("a channel send's failure: 429 and 5xx and the network pass, with a platform's wait; others do not", () => {
  // grammY (Telegram) puts the status in error_code and the wait in parameters.retry_after.
  assert.deepEqual(classifyDeliveryError({ error_code: 429, parameters: { retry_after: 7 } }), {
    retryable: true,
    retryAfterMs: 7000,
  });
  assert.deepEqual(classifyDeliveryError({ error_code: 400, description: 'Bad Request: chat not found' }), {
    retryable: false,
  });
  assert.deepEqual(classifyDeliveryError({ status: 503 }), { retryable: true });
  assert.deepEqual(classifyDeliveryError({ statusCode: 502 }), { retryable: true });
  assert.deepEqual(classifyDeliveryError({ response: { status: 500 } }), { retryable: true });
  assert.deepEqual(classifyDeliveryError({ status: 403 }), { retryable: false });
  const reset = Object.assign(new Error('fetch failed'), {
    cause: Object.assign(new Error('x'), { code: 'ECONNRESET' }),
  });
  assert.deepEqual(classifyDeliveryError(reset), { retryable: true });
  assert.deepEqual(classifyDeliveryError(new Error('channel telegram cannot send text')), { retryable: false });
  assert.deepEqual(classifyDeliveryError(undefined), { retryable: false });
});
