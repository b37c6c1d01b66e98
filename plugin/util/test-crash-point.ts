// TEST ONLY. A process started with HOOKGATE_TEST_CRASH_AT=<point> kills itself with SIGKILL the
// first time it reaches that point: the tests of the crash windows (test/process/once-marks.test.ts)
// stop it between two steps where no outside kill -9 could be timed. Unset, as in every real use, it
// does nothing. The points are listed in docs/reference/testing.md.
export type CrashPoint = 'digest-told' | 'batch-accepted' | 'batch-over-budget';

export function crashPoint(point: CrashPoint): void {
  if (process.env.HOOKGATE_TEST_CRASH_AT === point) process.kill(process.pid, 'SIGKILL');
}
