// Form bodies at their limits: a body of repeated fields is parsed in one pass, and a form with more
// fields than any sender sends is refused before it is decoded, while other requests are answered.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { post, withGateway } from '../helpers/recording-host.ts';
import { assertError } from '../helpers/common.ts';
import { MAX_FORM_FIELDS } from '../../plugin/http/form-body.ts';

const formMapping = {
  id: 'form',
  match: { path: 'form' },
  action: 'wake',
  body: 'form',
  allowUnsafeExternalContent: true,
  textTemplate: '{{a}}',
};
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

test('a form of repeated fields up to the limit is read whole; one over it is 400 invalid_body', async () => {
  await withGateway({ hooks: { mappings: [formMapping] } }, async (gw) => {
    const atLimit = Array.from({ length: MAX_FORM_FIELDS }, (_, i) => `a=${i}`).join('&');
    const ok = await post(gw.url, '/hooks/form', undefined, { rawBody: atLimit, headers: FORM });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    const values = JSON.parse(gw.rec.events.at(-1)!.text) as string[];
    assert.equal(values.length, MAX_FORM_FIELDS);
    assert.equal(values.at(-1), String(MAX_FORM_FIELDS - 1));

    // Empty pieces are no fields, as URLSearchParams reads them.
    const sparse = `${atLimit}&&&`;
    assert.equal((await post(gw.url, '/hooks/form', undefined, { rawBody: sparse, headers: FORM })).status, 200);

    const over = await post(gw.url, '/hooks/form', undefined, { rawBody: `${atLimit}&b=1`, headers: FORM });
    assertError(over, 400, 'invalid_body', /more than 1000 fields/);
    assert.equal(gw.rec.events.length, 2, 'the refused form changed nothing');
  });
});

test(
  'a 255 KB body of 87,000 repeats is refused, and the gateway answers others meanwhile',
  { timeout: 30_000 },
  async () => {
    await withGateway({ hooks: { mappings: [formMapping] } }, async (gw) => {
      const flood = 'a=&'.repeat(87_000);
      assert.ok(flood.length < 262_144, 'within the default body limit');
      const [refused, wake] = await Promise.all([
        post(gw.url, '/hooks/form', undefined, { rawBody: flood, headers: FORM }),
        post(gw.url, '/hooks/wake', { text: 'still here' }),
      ]);
      assertError(refused, 400, 'invalid_body');
      assert.equal(wake.status, 200);
      assert.equal(gw.rec.events.length, 1);
    });
  },
);
