// Reads a state file (JSON lines) as a stream, a line at a time, so no start ever holds a whole file
// in one string: memory is the read buffer and the line being handed over, whatever the file's size.
// A line longer than the bound is skipped without being gathered; a last line with no newline (a
// crash mid-write) is reported as torn. A missing file reads as empty.
import { createReadStream } from 'node:fs';
import { errnoCode } from './errors.ts';
import { stateFileError } from './state-file-error.ts';

/** The longest line a state file may hold: twice the largest action a mapping may carry (64 MiB). */
export const MAX_LINE_BYTES = 128 * 1024 * 1024;
const NEWLINE = 0x0a;
const READ_CHUNK = 1024 * 1024;

export interface LinesRead {
  /** Bytes up to the end of the last whole line (a torn tail is not counted). */
  bytes: number;
  /** Lines skipped for being longer than the bound. */
  tooLong: number;
  /** The file ends with a line that has no newline. */
  torn: boolean;
}

/**
 * Hands each whole line (without its newline) to `onLine` with its offset and its length in bytes,
 * the newline included. Empty lines are passed over.
 */
export async function readStateLines(
  path: string,
  onLine: (text: string, at: number, bytes: number) => void,
  maxLineBytes = MAX_LINE_BYTES,
): Promise<LinesRead> {
  const read: LinesRead = { bytes: 0, tooLong: 0, torn: false };
  /** The pieces of the line under way, and where it began. */
  let pieces: Buffer[] = [];
  let gathered = 0;
  let skipping = false;
  let lineAt = 0;
  let offset = 0;
  const stream = createReadStream(path, { highWaterMark: READ_CHUNK });
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      let from = 0;
      while (from < chunk.length) {
        const end = chunk.indexOf(NEWLINE, from);
        const stop = end < 0 ? chunk.length : end;
        if (!skipping) {
          if (gathered + (stop - from) > maxLineBytes) {
            // Too long: what was gathered goes, and the rest of the line is passed over unread.
            skipping = true;
            pieces = [];
            gathered = 0;
          } else if (stop > from) {
            pieces.push(chunk.subarray(from, stop));
            gathered += stop - from;
          }
        }
        if (end < 0) break;
        const bytes = offset + end + 1 - lineAt;
        if (skipping) read.tooLong++;
        else if (gathered > 0) {
          const text = pieces.length === 1 ? pieces[0]!.toString('utf8') : Buffer.concat(pieces).toString('utf8');
          onLine(text, lineAt, bytes);
        }
        pieces = [];
        gathered = 0;
        skipping = false;
        lineAt += bytes;
        from = end + 1;
      }
      offset += chunk.length;
    }
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') throw stateFileError(path, err);
    return read;
  }
  read.bytes = lineAt;
  read.torn = offset > lineAt;
  return read;
}
