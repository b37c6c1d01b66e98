// The heartbeat prompt stays bounded however many events piled up.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { heartbeatPrompt } from '../../plugin/hosts/standalone/server/heartbeat.ts';

test('heartbeat prompt lists every event when they fit', () => {
  const p = heartbeatPrompt(['one', 'two']);
  assert.equal(p, 'System events since the last heartbeat:\n- one\n- two');
});

test('heartbeat prompt clips long events and leaves out what exceeds 64 KB, saying how many', () => {
  const events = Array.from({ length: 500 }, (_, i) => `event ${i} ${'x'.repeat(10_000)}`);
  const p = heartbeatPrompt(events);
  assert.ok(p.length <= 64 * 1024 + 200, `prompt is ${p.length} chars`);
  assert.match(p, /- event 0 x+… \(clipped\)/);
  const included = (p.match(/^- event/gm) ?? []).length;
  assert.ok(included > 10);
  assert.match(p, new RegExp(`\\(${500 - included} more event\\(s\\) left out of this prompt`));
});
