// The test helpers' bounds on the processes they spawn: a "gateway" that never listens is killed
// once its start bound passes and the helper rejects; a child that ignores its stop is killed once
// the exit bound passes. Without them a slow machine hangs `npm test` instead of failing a test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { eventually, exitWithin, spawnCapturing, spawnGateway } from '../helpers/spawn-gateway.ts';
import { tempDir } from '../helpers/temp-dir.ts';

/** Node running `code`: it writes its pid to `pidFile` first, then runs for ever. */
function forever(pidFile: string, code = ''): string[] {
  return [
    '-e',
    `require('fs').writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); ${code} setInterval(() => {}, 1000);`,
  ];
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function pidIn(file: string): Promise<number> {
  return eventually(async () => Number(await readFile(file, 'utf8').catch(() => '')) || undefined, 60_000);
}

test('a spawned gateway that never listens is killed after its start bound, and the helper rejects', async () => {
  const dir = await tempDir('hookgate-bounds-');
  const pidFile = path.join(dir, 'pid');
  await assert.rejects(
    spawnGateway(dir, [], forever(pidFile), undefined, 3000),
    /did not start within 3000 ms; killed/,
  );
  const pid = await pidIn(pidFile);
  await eventually(async () => !isAlive(pid), 60_000);
});

test('a child that ignores its stop is killed after the exit bound, and the wait rejects', async () => {
  const dir = await tempDir('hookgate-bounds-');
  const pidFile = path.join(dir, 'pid');
  const { child, exited } = spawnCapturing(process.execPath, forever(pidFile, "process.on('SIGTERM', () => {});"));
  const pid = await pidIn(pidFile);
  child.kill('SIGTERM');
  await assert.rejects(
    exitWithin(child, exited, 2000, 'the stubborn child'),
    /the stubborn child did not exit within 2000 ms; killed/,
  );
  await eventually(async () => !isAlive(pid), 60_000);
});
