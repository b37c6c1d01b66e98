// A plain-text table for CLI output and the dry run's report (which the admin API answers too): a
// header row, columns padded to their widest cell, numbers right-aligned. Cells are one line each;
// control characters never reach the terminal.
import { truncate } from './text.ts';

export interface Column<Row> {
  header: string;
  cell: (row: Row) => string | number | undefined;
  /** Right-aligned (numbers); default left. */
  right?: boolean;
  /** Longest cell shown; longer ones end in '…'. */
  max?: number;
  /** Narrowest the column is, so tables printed one after another (--follow) line up. */
  min?: number;
}

/** One printable line: control characters (escape sequences included) become '?'. */
export function printable(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, '?');
}

/** The header line and one line per row; `header: false` leaves the header out (rows printed later). */
export function formatTable<Row>(
  columns: readonly Column<Row>[],
  rows: readonly Row[],
  { header = true }: { header?: boolean } = {},
): string {
  const cells = rows.map((row) =>
    columns.map((c) => {
      const v = c.cell(row);
      const text = printable(v === undefined ? '' : String(v));
      return c.max === undefined ? text : truncate(text, c.max);
    }),
  );
  const widths = columns.map((c, i) => Math.max(c.min ?? 0, c.header.length, ...cells.map((r) => r[i]!.length)));
  const line = (values: readonly string[]): string =>
    values
      .map((v, i) => (columns[i]!.right ? v.padStart(widths[i]!) : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  const lines = cells.map(line);
  if (header) lines.unshift(line(columns.map((c) => c.header)));
  return lines.join('\n');
}
