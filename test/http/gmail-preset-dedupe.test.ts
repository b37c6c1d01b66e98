// The gmail preset dedupes each message by its Gmail id: a batch sent again runs nothing, a batch
// overlapping an earlier one runs only its new messages, and a bad message refuses the whole batch
// before any of it runs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { post, withGateway } from '../helpers/recording-host.ts';

const msg = (id: string) => ({ id, from: `${id}@example.com`, subject: `s-${id}`, snippet: `about ${id}` });

test('gmail preset: each message runs once per Gmail id, whichever batch it comes in', async () => {
  await withGateway({ hooks: { presets: ['gmail'] } }, async (gw) => {
    const first = await post(gw.url, '/hooks/gmail', { messages: [msg('a'), msg('b')] });
    assert.equal(first.status, 202);
    assert.equal(first.body.runIds.length, 2);

    const again = await post(gw.url, '/hooks/gmail', { messages: [msg('a'), msg('b')] });
    assert.equal(again.status, 202);
    assert.equal(again.body.duplicate, true);
    assert.deepEqual(again.body.runIds, first.body.runIds, 'the first answers, not new runs');

    const overlap = await post(gw.url, '/hooks/gmail', { messages: [msg('b'), msg('c')] });
    assert.equal(overlap.status, 202);
    assert.equal(overlap.body.duplicates, 1);
    assert.equal(overlap.body.runIds[0], first.body.runIds[1]);
    const newRun = overlap.body.runIds[1] as string;
    assert.ok(!first.body.runIds.includes(newRun));

    await gw.finalRun(newRun);
    const sessions = gw.rec.turns.map((t) => t.sessionKey).sort();
    assert.deepEqual(sessions, ['agent:main:hook:gmail:a', 'agent:main:hook:gmail:b', 'agent:main:hook:gmail:c']);

    const bad = await post(gw.url, '/hooks/gmail', {
      messages: [msg('d'), { id: 'e', subject: 'no sender', snippet: 'x' }],
    });
    assert.equal(bad.status, 400);
    assert.match(bad.body.error, /messages\[1\]\.sender/);
    const retry = await post(gw.url, '/hooks/gmail', { messages: [msg('d')] });
    assert.equal(retry.body.duplicate, undefined, 'd did not run with the refused batch');
  });
});

test('gmail preset: hooks.gmail model, thinking and allowUnsafeExternalContent apply to its runs', async () => {
  await withGateway(
    {
      hooks: {
        presets: ['gmail'],
        gmail: { model: 'echo/echo', thinking: 'low', allowUnsafeExternalContent: true },
      },
    },
    async (gw) => {
      const r = await post(gw.url, '/hooks/gmail', { messages: [msg('m')] });
      assert.equal(r.status, 202);
      await gw.finalRun(r.body.runId);
      const turn = gw.rec.turns.at(-1)!;
      assert.equal(turn.model, 'echo/echo');
      assert.equal(turn.thinking, 'low');
      assert.equal(turn.prompt, 'New email from m@example.com\nSubject: s-m\n\nabout m', 'not wrapped');
    },
  );
  await withGateway({ hooks: { presets: ['gmail'] } }, async (gw) => {
    const r = await post(gw.url, '/hooks/gmail', { messages: [msg('n')] });
    await gw.finalRun(r.body.runId);
    const turn = gw.rec.turns.at(-1)!;
    assert.equal(turn.model, undefined);
    assert.match(turn.prompt, /Kind: email/, 'wrapped by default');
  });
});
