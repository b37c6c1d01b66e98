// outbox.ts: deliveries on disk, the last route per agent in memory, retention.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import path from 'node:path';
import { Outbox } from '../../../plugin/hosts/standalone/storage/outbox.ts';
import { tempDir } from '../../helpers/temp-dir.ts';
import { recordingLogger, withTempDir, quiet, dirBytes, KiB, MiB, small } from '../../helpers/storage-fixtures.ts';

test('outbox: entries persist, lastRoute follows the latest delivery per agent', async () => {
  await withTempDir(async (dir) => {
    const file = path.join(dir, 'outbox.jsonl');
    const outbox = new Outbox(file, recordingLogger());
    await outbox.open();
    assert.deepEqual(await outbox.list(), []);
    assert.equal(outbox.lastRoute('main'), undefined);

    await outbox.append({ channel: 'telegram', to: '123', text: 'first', runId: 'r1', agentId: 'main' });
    await outbox.append({ channel: 'slack', text: 'ops note', runId: 'r2', agentId: 'ops' });
    await outbox.append({ channel: 'discord', to: 'chan-9', text: 'second', runId: 'r3', agentId: 'main' });
    assert.deepEqual(outbox.lastRoute('main'), { channel: 'discord', to: 'chan-9' });
    assert.deepEqual(outbox.lastRoute('ops'), { channel: 'slack' });
    await outbox.close();

    const again = new Outbox(file, recordingLogger());
    await again.open();
    const list = await again.list();
    assert.deepEqual(
      list.map((e) => [e.channel, e.to, e.text, e.runId, e.agentId]),
      [
        ['telegram', '123', 'first', 'r1', 'main'],
        ['slack', undefined, 'ops note', 'r2', 'ops'],
        ['discord', 'chan-9', 'second', 'r3', 'main'],
      ],
    );
    for (const e of list) assert.ok(!Number.isNaN(Date.parse(e.at)));
    assert.deepEqual(again.lastRoute('main'), { channel: 'discord', to: 'chan-9' });
    assert.deepEqual(again.lastRoute('ops'), { channel: 'slack' });
    assert.equal(again.lastRoute('nobody'), undefined);
    await again.close();
  });
});

test('retention: the outbox keeps its newest deliveries within its bound', async () => {
  const dir = await tempDir('hookgate-bounds-');
  const file = path.join(dir, 'outbox.jsonl');
  const outbox = new Outbox(file, quiet, small);
  await outbox.open();
  for (let n = 0; n < 800; n++)
    await outbox.append({
      channel: 'slack',
      to: `#c${n}`,
      text: `delivery ${n} ${'d'.repeat(1000)}`,
      runId: `r${n}`,
      agentId: n % 2 ? 'ops' : 'main',
    });
  await outbox.close();
  const { bytes } = await dirBytes(dir, 'outbox.jsonl');
  assert.ok(bytes <= small.retainBytes + small.segmentBytes, `${bytes} bytes kept`);

  const again = new Outbox(file, quiet, small);
  await again.open();
  const kept = (await again.list()).map((d) => Number(d.runId.slice(1)));
  assert.ok(kept[0]! > 0);
  assert.equal(kept.at(-1), 799);
  // The last routes come from the newest segments alone.
  assert.deepEqual(again.lastRoute('main'), { channel: 'slack', to: '#c798' });
  assert.deepEqual(again.lastRoute('ops'), { channel: 'slack', to: '#c799' });
  await again.close();
});

test('outbox: deliveries are not held in memory, only the last route of each agent', async () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const dir = await tempDir('hookgate-bounds-');
  const outbox = new Outbox(path.join(dir, 'outbox.jsonl'), quiet);
  await outbox.open();
  gc();
  const before = process.memoryUsage().heapUsed;
  const text = (n: number) => `${n} ${'t'.repeat(100 * KiB)}`;
  // 150 MB of deliveries, in batches that are each acknowledged.
  for (let n = 0; n < 1500; n += 50) {
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        outbox.append({ channel: 'slack', text: text(n + i), runId: `r${n + i}`, agentId: `agent-${(n + i) % 3}` }),
      ),
    );
  }
  gc();
  const grew = process.memoryUsage().heapUsed - before;
  assert.ok(grew < 20 * MiB, `the heap grew by ${(grew / MiB).toFixed(1)} MiB`);
  assert.deepEqual(outbox.lastRoute('agent-2'), { channel: 'slack' });
  const page = await outbox.page(2);
  assert.deepEqual(
    page.deliveries.map((d) => d.runId),
    ['r1498', 'r1499'],
  );
  await outbox.close();
});
