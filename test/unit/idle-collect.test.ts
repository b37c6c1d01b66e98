// server/idle-collect.ts: one full collection once the process is idle after its heap grew; none
// while it is busy, none when the heap has not grown, none without gc exposed.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  collectWhenIdle,
  GROWN_BYTES,
  type IdleCollectParts,
} from '../../plugin/hosts/standalone/server/idle-collect.ts';
import type { LogFields, Logger } from '../../plugin/host.ts';

const INTERVAL_MS = 20;
/** The collector's timer is unref'd: this keeps the test's event loop alive while it waits for checks. */
const keepAlive = setInterval(() => {}, 60_000);
after(() => clearInterval(keepAlive));

/** A process whose CPU and heap the test sets; each check is awaited, not slept for. */
function fakeProcess() {
  const state = { cpu: 0, heap: 50 * 1024 * 1024, collections: 0, checks: 0 };
  let checked: (() => void) | undefined;
  const parts: IdleCollectParts = {
    cpuMicros: () => state.cpu,
    heapBytes() {
      // Read once per check (and after a collection): a check has happened.
      state.checks++;
      checked?.();
      return state.heap;
    },
    collect() {
      state.collections++;
      state.heap = 40 * 1024 * 1024;
    },
    intervalMs: INTERVAL_MS,
  };
  const nextCheck = () => new Promise<void>((resolve) => (checked = resolve));
  return { state, parts, nextCheck };
}

function logger(): Logger & { lines: [string, LogFields | undefined][] } {
  const lines: [string, LogFields | undefined][] = [];
  const note = (m: string, f?: LogFields) => void lines.push([m, f]);
  return { lines, info: note, warn: note, error: note };
}

test('idle after the heap grew: one collection, logged with the heap before and after; none again until it grows', async () => {
  const { state, parts, nextCheck } = fakeProcess();
  const log = logger();
  const collector = collectWhenIdle(log, parts);
  try {
    // Busy: a tenth of a core through each interval, while the heap grows.
    for (let i = 0; i < 3; i++) {
      state.cpu += INTERVAL_MS * 100;
      state.heap += GROWN_BYTES;
      await nextCheck();
    }
    assert.equal(state.collections, 0, 'never while busy');
    // Idle now: the next check collects.
    await nextCheck();
    await nextCheck();
    assert.equal(state.collections, 1);
    assert.deepEqual(log.lines, [['memory given back once idle', { heapMb: 74, afterMb: 40 }]]);
    for (let i = 0; i < 3; i++) await nextCheck();
    assert.equal(state.collections, 1, 'the heap has not grown since');
    state.heap += GROWN_BYTES;
    await nextCheck();
    await nextCheck();
    assert.equal(state.collections, 2);
  } finally {
    collector.stop();
  }
});

test('a heap grown by less than the bound is left alone, idle or not', async () => {
  const { state, parts, nextCheck } = fakeProcess();
  const collector = collectWhenIdle(logger(), parts);
  try {
    state.heap += GROWN_BYTES - 1;
    for (let i = 0; i < 4; i++) await nextCheck();
    assert.equal(state.collections, 0);
  } finally {
    collector.stop();
  }
});

test('without gc exposed nothing is started', () => {
  const { parts } = fakeProcess();
  const collector = collectWhenIdle(logger(), { ...parts, collect: undefined, heapBytes: () => assert.fail('read') });
  collector.stop();
});
