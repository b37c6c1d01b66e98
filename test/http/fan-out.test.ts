// forEach: one action per item of a payload array, templates and transforms seeing the item and its
// index, a bound on the items, and per-item idempotency keys.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { post, withGateway } from '../helpers/recording-host.ts';

const T = 'hooks/transforms';

test('forEach over 3 items: 3 runs with 3 runIds, each message built from its item', async () => {
  await withGateway(
    {
      hooks: {
        mappings: [
          {
            id: 'alerts',
            match: { path: 'alerts' },
            action: 'agent',
            deliver: false,
            forEach: 'alerts',
            messageTemplate: '#{{index}} {{item.name}} in {{cluster}}',
          },
        ],
      },
    },
    async (gw) => {
      const r = await post(gw.url, '/hooks/alerts', {
        cluster: 'eu-1',
        alerts: [{ name: 'disk' }, { name: 'cpu' }, { name: 'oom' }],
      });
      assert.equal(r.status, 202, JSON.stringify(r.body));
      assert.equal(r.body.runIds.length, 3);
      assert.equal(new Set(r.body.runIds).size, 3);
      assert.equal(r.body.runId, r.body.runIds[0]);
      await gw.finalRuns(3);
      const prompts = gw.rec.turns.map((t) => t.prompt);
      for (const [i, name] of ['disk', 'cpu', 'oom'].entries())
        assert.ok(
          prompts.some((p) => p.includes(`#${i} ${name} in eu-1`)),
          name,
        );
    },
  );
});

test('forEach with wakes answers 200 with the count; more than maxItems is 400 too_many_items and nothing happens', async () => {
  await withGateway(
    {
      hooks: {
        mappings: [
          {
            id: 'w',
            match: { path: 'w' },
            action: 'wake',
            forEach: 'payload.events',
            maxItems: 3,
            allowUnsafeExternalContent: true,
            textTemplate: '{{item}}',
          },
          {
            id: 'r',
            match: { path: 'r' },
            action: 'agent',
            deliver: false,
            forEach: 'items',
            messageTemplate: '{{item}}',
          },
        ],
      },
    },
    async (gw) => {
      const ok = await post(gw.url, '/hooks/w', { events: ['a', 'b', 'c'] });
      assert.deepEqual(ok.body, { ok: true, mode: 'now', count: 3 });
      assert.deepEqual(
        gw.rec.events.map((e) => e.text),
        ['a', 'b', 'c'],
      );
      const tooMany = await post(gw.url, '/hooks/w', { events: ['a', 'b', 'c', 'd'] });
      assert.equal(tooMany.status, 400);
      assert.equal(tooMany.body.code, 'too_many_items');
      const runs = await post(gw.url, '/hooks/r', { items: Array.from({ length: 101 }, (_, i) => `i${i}`) });
      assert.equal(runs.status, 400);
      assert.equal(runs.body.code, 'too_many_items');
      assert.equal(gw.rec.events.length, 3);
      assert.equal(gw.rec.runUpdates.length, 0);
      const notArray = await post(gw.url, '/hooks/w', { events: 'a' });
      assert.equal(notArray.status, 400);
      assert.equal(notArray.body.code, 'invalid_payload');
    },
  );
});

test('a transform sees item and index, and may skip an item', async () => {
  await withGateway(
    {
      files: {
        [`${T}/each.js`]: `export default (ctx) => ctx.item.skip ? null : { text: ctx.index + ':' + ctx.item.name + '/' + ctx.payload.batch };`,
      },
      hooks: {
        mappings: [
          {
            id: 'each',
            match: { path: 'each' },
            action: 'wake',
            allowUnsafeExternalContent: true,
            forEach: 'rows',
            transform: { module: 'each.js' },
          },
        ],
      },
    },
    async (gw) => {
      const r = await post(gw.url, '/hooks/each', {
        batch: 'b1',
        rows: [{ name: 'x' }, { name: 'y', skip: true }, { name: 'z' }],
      });
      assert.deepEqual(r.body, { ok: true, mode: 'now', count: 2 });
      assert.deepEqual(
        gw.rec.events.map((e) => e.text),
        ['0:x/b1', '2:z/b1'],
      );
    },
  );
});

test('per-item keys: an item already delivered is not acted on again; a request of only such items is a duplicate', async () => {
  await withGateway(
    {
      hooks: {
        mappings: [
          {
            id: 'mail',
            match: { path: 'mail' },
            action: 'agent',
            deliver: false,
            forEach: 'messages',
            messageTemplate: 'mail {{item.id}}',
            dedupe: { key: '{{item.id}}' },
          },
        ],
      },
    },
    async (gw) => {
      const first = await post(gw.url, '/hooks/mail', { messages: [{ id: 'm1' }, { id: 'm2' }] });
      assert.equal(first.status, 202);
      assert.equal(first.body.runIds.length, 2);
      const overlap = await post(gw.url, '/hooks/mail', { messages: [{ id: 'm2' }, { id: 'm3' }] });
      assert.equal(overlap.status, 202);
      assert.equal(overlap.body.runIds[0], first.body.runIds[1], 'm2 keeps its first run');
      assert.equal(overlap.body.duplicates, 1);
      assert.equal(overlap.body.duplicate, undefined);
      const again = await post(gw.url, '/hooks/mail', { messages: [{ id: 'm1' }, { id: 'm3' }] });
      assert.equal(again.body.duplicate, true);
      assert.equal(again.headers.get('x-hookgate-duplicate'), '1');
      assert.deepEqual(again.body.runIds, [first.body.runIds[0], overlap.body.runIds[1]]);
      await gw.finalRuns(3);
      assert.equal(gw.rec.turns.length, 3);
    },
  );
});

test('outside a forEach, item and index are payload fields like any other', async () => {
  await withGateway(
    {
      hooks: {
        mappings: [
          {
            id: 'p',
            match: { path: 'p' },
            action: 'wake',
            allowUnsafeExternalContent: true,
            textTemplate: '{{item.name}}/{{index}}',
          },
        ],
      },
    },
    async (gw) => {
      await post(gw.url, '/hooks/p', { item: { name: 'n' }, index: 7 });
      assert.equal(gw.rec.events.at(-1)!.text, 'n/7');
    },
  );
});
