// One request may not become many times its size: the text a request's actions carry is bounded by
// its mapping's maxActionBytes (checked before anything is carried out), and the gmail preset takes
// at most 100 messages (runs) a request.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { post, withGateway } from '../helpers/recording-host.ts';
import { assertError } from '../helpers/common.ts';

const T = 'hooks/transforms';
/** About 250 KB of payload, within the default body limit. */
const bulk = 'p'.repeat(250_000);
const items = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `i-${i}` }));

test('a fan-out copying the payload into every item is 400 output_too_large, and nothing happens', async () => {
  await withGateway(
    {
      files: {
        // A transform padding every item as far as its own output limit allows.
        [`${T}/pad.mjs`]: "export default ({ item }) => ({ text: `${item.id} ${'x'.repeat(200_000)}` });\n",
      },
      hooks: {
        mappings: [
          // Every item's text holds the whole payload.
          {
            id: 'copy',
            match: { path: 'copy' },
            action: 'wake',
            forEach: 'items',
            allowUnsafeExternalContent: true,
            textTemplate: '{{item.id}} {{payload}}',
          },
          // The same with a key per item: every item is built (and measured) before any key is claimed.
          {
            id: 'keyed',
            match: { path: 'keyed' },
            action: 'wake',
            forEach: 'items',
            allowUnsafeExternalContent: true,
            textTemplate: '{{item.id}} {{bulk}}',
            dedupe: { key: '{{item.id}}' },
          },
          { id: 'pad', match: { path: 'pad' }, action: 'wake', forEach: 'items', transform: { module: 'pad.mjs' } },
          // Room for it when the operator says so.
          {
            id: 'roomy',
            match: { path: 'roomy' },
            action: 'wake',
            forEach: 'items',
            allowUnsafeExternalContent: true,
            textTemplate: '{{item.id}} {{bulk}}',
            maxActionBytes: 2_000_000,
          },
        ],
      },
    },
    async (gw) => {
      const copy = await post(gw.url, '/hooks/copy', { bulk, items: items(100) });
      assertError(
        copy,
        400,
        'output_too_large',
        /mapping "copy": .* more than 1048576 bytes of text \(its maxActionBytes\)/,
      );
      const keyed = await post(gw.url, '/hooks/keyed', { bulk, items: items(5) });
      assertError(keyed, 400, 'output_too_large');
      const padded = await post(gw.url, '/hooks/pad', { items: items(6) });
      assertError(padded, 400, 'output_too_large');
      assert.equal(gw.rec.events.length, 0, 'no item acted');

      // The refused request claimed no key: the same items act once they fit.
      const small = await post(gw.url, '/hooks/keyed', { bulk: 'b', items: items(5) });
      assert.equal(small.status, 200, JSON.stringify(small.body));
      assert.equal(small.body.count, 5);
      assert.equal(small.body.duplicates, undefined);

      // 1.25 MB: over the default, within this mapping's own limit.
      const roomy = await post(gw.url, '/hooks/roomy', { bulk, items: items(5) });
      assert.equal(roomy.status, 200, JSON.stringify(roomy.body));
      assert.equal(gw.rec.events.length, 10);
    },
  );
});

test("an item repeating an earlier item's key in the same request is answered as that item", async () => {
  await withGateway(
    {
      hooks: {
        mappings: [
          {
            id: 'keyed',
            match: { path: 'keyed' },
            action: 'wake',
            forEach: 'items',
            allowUnsafeExternalContent: true,
            textTemplate: '{{item.id}}',
            dedupe: { key: '{{item.id}}' },
          },
        ],
      },
    },
    async (gw) => {
      const r = await post(gw.url, '/hooks/keyed', { items: [{ id: 'a' }, { id: 'b' }, { id: 'a' }] });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual([r.body.count, r.body.duplicates], [3, 1]);
      assert.deepEqual(
        gw.rec.events.map((e) => e.text),
        ['a', 'b'],
      );
    },
  );
});

test('the gmail preset takes at most 100 messages a request (the watcher posts 100 at most)', async () => {
  await withGateway({ hooks: { presets: ['gmail'] } }, async (gw) => {
    const message = (i: number) => ({ id: `m-${i}`, sender: 'a@example.com', subject: 's', snippet: 'x' });
    const over = await post(gw.url, '/hooks/gmail', { messages: Array.from({ length: 101 }, (_, i) => message(i)) });
    assert.equal(over.status, 400);
    assert.equal(gw.rec.turns.length, 0);
    const fits = await post(gw.url, '/hooks/gmail', { messages: Array.from({ length: 100 }, (_, i) => message(i)) });
    assert.equal(fits.status, 202, JSON.stringify(fits.body).slice(0, 300));
    assert.equal(fits.body.runIds.length, 100);
  });
});
