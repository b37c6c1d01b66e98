// spreadOverdue: the times a start gives retries whose due time passed while the process was down.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { spreadOverdue } from '../../../plugin/retry/overdue.ts';

test('overdue items keep their order and their gaps, each gap at most the cap; later ones keep their time', () => {
  const from = 1_000_000;
  const items = [
    { item: 'c', dueAt: from - 100 },
    { item: 'later', dueAt: from + 5000 },
    { item: 'a', dueAt: from - 60_000 },
    { item: 'b', dueAt: from - 59_950 },
  ];
  assert.deepEqual(spreadOverdue(items, from, 1000), [
    { item: 'a', at: from },
    // 50 ms apart when due: 50 ms apart now.
    { item: 'b', at: from + 50 },
    // Nearly a minute apart when due: the cap.
    { item: 'c', at: from + 1050 },
    { item: 'later', at: from + 5000 },
  ]);
});

test('an unreadable due time counts as long overdue: first, then the cap to the next', () => {
  assert.deepEqual(
    spreadOverdue(
      [
        { item: 'dated', dueAt: 900 },
        { item: 'unreadable', dueAt: Number.NaN },
      ],
      1000,
      10,
    ),
    [
      { item: 'unreadable', at: 1000 },
      { item: 'dated', at: 1010 },
    ],
  );
});
