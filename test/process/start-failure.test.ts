// The real gateway and a start it cannot make: a state file replaced by a directory (the failure
// book's, the outbox's, a session's), or a port already taken. The process exits non-zero within a
// bound, its last line names the file (or the address) and what is wrong, and nothing keeps it
// alive, so a supervisor restarts it. A damaged file that can be skipped is skipped, with one
// warning naming it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import {
  EXIT_BOUND_MS,
  exitWithin,
  SOURCE_CLI,
  spawnCapturing,
  spawnGateway,
  tempStateDir,
  writeConfig,
} from '../helpers/spawn-gateway.ts';

/** Starts the gateway in `dir` and waits for it to end: its exit code and what it printed. */
async function failedStart(dir: string, args: string[] = []): Promise<{ code: number | null; lines: string[] }> {
  const { child, output, exited } = spawnCapturing(process.execPath, [
    ...SOURCE_CLI,
    'gateway',
    '--state-dir',
    dir,
    '--port',
    '0',
    ...args,
  ]);
  const code = await exitWithin(child, exited, EXIT_BOUND_MS, 'the gateway that cannot start');
  return { code, lines: output().split('\n').filter(Boolean) };
}

for (const file of ['data/after/failures.jsonl', 'data/after/retries.jsonl', 'data/outbox.jsonl']) {
  test(`a directory in the place of ${file}: the gateway exits non-zero with one line naming it`, async () => {
    const dir = await tempStateDir();
    await writeConfig(dir);
    await mkdir(path.join(dir, file), { recursive: true });
    const { code, lines } = await failedStart(dir);
    assert.equal(code, 1);
    const named = lines.filter((l) => l.includes(path.join(dir, file)));
    assert.deepEqual(named, [`hookgate: cannot start: state file ${path.join(dir, file)} is a directory, not a file`]);
    assert.equal(lines.at(-1), named[0], 'the failure is the last line');
    assert.ok(!lines.some((l) => l.includes('listening on')));
  });
}

test("a directory in the place of the main session's file: the gateway exits non-zero naming it", async () => {
  const dir = await tempStateDir();
  await writeConfig(dir);
  const file = path.join(dir, 'data', 'sessions', 'agent%3amain%3amain.jsonl');
  await mkdir(file, { recursive: true });
  const { code, lines } = await failedStart(dir);
  assert.equal(code, 1);
  assert.equal(lines.at(-1), `hookgate: cannot start: state file ${file} is a directory, not a file`);
});

test('a port already taken: the gateway exits non-zero with one line naming the address', async () => {
  const dir = await tempStateDir();
  await writeConfig(dir);
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const { port } = taken.address() as { port: number };
  try {
    const { code, lines } = await failedStart(dir, ['--port', String(port)]);
    assert.equal(code, 1);
    assert.match(lines.at(-1)!, new RegExp(`^hookgate: cannot start: .*EADDRINUSE.*127\\.0\\.0\\.1:${port}$`));
  } finally {
    taken.close();
  }
});

test('unreadable lines in a state file are skipped with one warning naming the file, and the gateway starts', async () => {
  const dir = await tempStateDir();
  await writeConfig(dir);
  const file = path.join(dir, 'data', 'after', 'failures.jsonl');
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, 'not json\n{"id": 3}\n\u0000\u0001 garbage\n');
  const gw = await spawnGateway(dir);
  try {
    assert.deepEqual((await gw.admin('/api/failures')).failures, []);
    const warnings = gw
      .output()
      .split('\n')
      .filter((l) => l.includes(file));
    assert.equal(warnings.length, 1, gw.output());
    assert.equal(JSON.parse(warnings[0]!).level, 'warn');
  } finally {
    assert.equal(await gw.stop(), 0);
  }
});
