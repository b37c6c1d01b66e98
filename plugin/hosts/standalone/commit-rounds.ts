// When the JSONL logs write their waiting lines: all together, in rounds, and under load at most one
// round per ROUND_GAP_MS.
//
// Every file write goes through libuv's thread pool: a wake-up of a pool thread and another of the
// event loop when it is done. On this project's 2-vCPU VM those hand-offs cost more CPU than the
// writes (handing one write to the pool takes the event loop about 17 µs on average), and a log that
// wrote again as soon as its last write finished made about 1,600 writes a second under a flood of
// wakes. Writing every log's lines in the same round, and leaving a gap
// between rounds, turns them into fewer and larger writes. After a quiet spell the round runs at
// once (on the next turn of the event loop), so a lone request waits for nothing but its own write.

/** The least time between the starts of two rounds; a request waits at most this long for its write to start. */
export const ROUND_GAP_MS = 1;

let waiting: (() => void)[] = [];
let scheduled = false;
let lastRound = -Infinity;

/** Runs `write` in the next round: one turn of the event loop away, or the rest of the gap. */
export function inNextRound(write: () => void): void {
  waiting.push(write);
  if (scheduled) return;
  scheduled = true;
  // setImmediate rather than a microtask: lines appended from promise continuations of the same
  // turn still join the round.
  const wait = lastRound + ROUND_GAP_MS - performance.now();
  if (wait <= 0) setImmediate(runRound);
  else setTimeout(runRound, wait);
}

function runRound(): void {
  scheduled = false;
  lastRound = performance.now();
  const writes = waiting;
  waiting = [];
  for (const write of writes) write();
}
