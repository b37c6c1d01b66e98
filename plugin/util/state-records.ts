// The lines of a state file as keyed records: each line is an upsert `{ id, r }` or a removal
// `{ id, del: true }`. Read as a stream (state-lines.ts), a line at a time; a line that JSON or the
// record's shape refuses is counted, never thrown.
import { readStateLines, MAX_LINE_BYTES } from './state-lines.ts';

export type StateLine = { id: string; r: unknown } | { id: string; del: true };

export interface RecordLinesRead {
  /** Lines read whole (refused ones included). */
  lines: number;
  /** Lines JSON or `isRecord` refused. */
  refused: number;
  /** Lines longer than the bound, skipped unread. */
  tooLong: number;
  /** The file ends with a line a crash cut (not counted in `lines` or `bytes`). */
  torn: boolean;
  /** Bytes up to the end of the last whole line. */
  bytes: number;
}

/** One line's meaning: the record set (`null` for a removal), or undefined when refused. */
export function parseStateLine<T>(
  text: string,
  isRecord: (value: unknown) => value is T,
): { id: string; record: T | null } | undefined {
  let line: { id?: unknown; r?: unknown; del?: unknown };
  try {
    line = JSON.parse(text) as typeof line;
  } catch {
    return undefined;
  }
  if (typeof line !== 'object' || line === null || typeof line.id !== 'string') return undefined;
  if (line.del === true) return { id: line.id, record: null };
  return isRecord(line.r) ? { id: line.id, record: line.r } : undefined;
}

/** Hands each accepted line to `onRecord` in file order, with where it is and what it weighs. */
export async function readRecordLines<T>(
  path: string,
  isRecord: (value: unknown) => value is T,
  onRecord: (id: string, record: T | null, at: number, bytes: number) => void,
  maxLineBytes = MAX_LINE_BYTES,
): Promise<RecordLinesRead> {
  let lines = 0;
  let refused = 0;
  const read = await readStateLines(
    path,
    (text, at, bytes) => {
      lines++;
      const line = parseStateLine(text, isRecord);
      if (line === undefined) refused++;
      else onRecord(line.id, line.record, at, bytes);
    },
    maxLineBytes,
  );
  return { lines, refused, tooLong: read.tooLong, torn: read.torn, bytes: read.bytes };
}

/**
 * The live records of a state file as it is on disk, nothing written (a missing file has none);
 * `refused` counts the lines `isRecord` or JSON refused, a torn last one included.
 */
export async function readStateRecords<T>(
  path: string,
  isRecord: (value: unknown) => value is T,
): Promise<{ records: Map<string, T>; lines: number; refused: number }> {
  const records = new Map<string, T>();
  const read = await readRecordLines(path, isRecord, (id, record) => {
    if (record === null) records.delete(id);
    else records.set(id, record);
  });
  return { records, lines: read.lines, refused: read.refused + (read.torn ? 1 : 0) };
}
