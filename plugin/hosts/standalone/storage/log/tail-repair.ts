// Tail repair, on a log's first use after a start: a process killed mid-write can leave the last line
// torn. A tail that is a whole record that only lost its newline is completed; anything else is cut
// off, so new lines are never glued onto a torn one. Nothing before the last newline is touched.
import { open, type FileHandle } from 'node:fs/promises';
import type { Logger } from '../../../../host.ts';
import { errnoCode } from '../../../../util/errors.ts';
import { readFully, type Line } from './line-reader.ts';

const NEWLINE = 0x0a;
/** A torn tail longer than this is not worth trying to complete; it is cut off. */
const MAX_TAIL_SALVAGE = 1024 * 1024;

/** Makes sure the file ends in "\n", so new lines are never glued onto a torn one; returns its size. */
export async function repairTail(file: string, logger: Logger, parses: (line: Line) => boolean): Promise<number> {
  let fh: FileHandle;
  try {
    fh = await open(file, 'r+');
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return 0;
    throw err;
  }
  try {
    const { size } = await fh.stat();
    if (size === 0) return 0;
    const one = Buffer.alloc(1);
    await readFully(fh, one, 1, size - 1);
    if (one[0] === NEWLINE) return size;

    // Find the byte after the last newline.
    const chunk = Buffer.alloc(64 * 1024);
    let end = size;
    let cut = 0;
    while (end > 0) {
      const start = Math.max(0, end - chunk.length);
      const got = await readFully(fh, chunk, end - start, start);
      const idx = chunk.subarray(0, got).lastIndexOf(NEWLINE);
      if (idx >= 0) {
        cut = start + idx + 1;
        break;
      }
      end = start;
    }

    // A tail that is a complete record lost only its newline: keep it.
    const tailLength = size - cut;
    if (tailLength <= MAX_TAIL_SALVAGE) {
      const tail = Buffer.alloc(tailLength);
      await readFully(fh, tail, tailLength, cut);
      if (parses({ offset: cut, bytes: tail })) {
        await fh.write('\n', size, 'utf8');
        logger.warn(`jsonl log: ${file} did not end in a newline; completed its last line`, {
          file: file,
        });
        return size + 1;
      }
    }
    await fh.truncate(cut);
    logger.warn(`jsonl log: cut a torn last line (${tailLength} bytes) from ${file}`, {
      file: file,
      bytes: tailLength,
    });
    return cut;
  } finally {
    await fh.close();
  }
}
