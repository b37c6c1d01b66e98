// The CLI's table formatter: aligned columns, clipped cells, nothing that steers the terminal.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatTable, type Column } from '../../plugin/util/table.ts';

interface Row {
  name: string;
  n: number;
}
const columns: Column<Row>[] = [
  { header: 'NAME', cell: (r) => r.name, max: 8 },
  { header: 'N', cell: (r) => r.n, right: true },
];

test('columns are padded to the widest cell, numbers right-aligned', () => {
  const out = formatTable(columns, [
    { name: 'a', n: 1 },
    { name: 'longer', n: 100 },
  ]);
  assert.equal(out, ['NAME      N', 'a         1', 'longer  100'].join('\n'));
});

test('long cells are clipped and control characters never reach the terminal', () => {
  const out = formatTable(columns, [{ name: '\u001b]0;pwned\u0007x', n: 1 }]);
  assert.ok(!/[\u0000-\u001f]/.test(out.replace(/\n/g, '')), JSON.stringify(out));
  assert.match(out, /\?\]0;pwn…/);
});

test('rows without the header, widths held by min (for --follow)', () => {
  const out = formatTable(
    [{ header: 'A', cell: (r: Row) => r.name, min: 5 }, ...columns.slice(1)],
    [{ name: 'x', n: 2 }],
    {
      header: false,
    },
  );
  assert.equal(out, 'x      2');
});
