// How much text one request's actions carry: a fan-out that copies a large payload into every item
// (or a transform that pads each one) would otherwise turn one request into many times its size in
// prompts, session files and memory. Counted as the actions are built, before any is carried out.
import { refuse } from '../errors.ts';
import type { Action } from '../action.ts';
import type { CompiledMapping } from './mapping.ts';

/** Bytes of text an action carries: its wakes' texts and its runs' messages, as UTF-8. */
export function actionTextBytes(action: Action): number {
  let bytes = 0;
  for (const wake of action.wakes) bytes += Buffer.byteLength(wake.text, 'utf8');
  for (const run of action.runs) bytes += Buffer.byteLength(run.message, 'utf8');
  return bytes;
}

/** A 400 once the actions built so far for one request carry more than the mapping allows. */
export function checkActionBytes(m: CompiledMapping, bytes: number): void {
  if (bytes <= m.maxActionBytes) return;
  throw refuse.outputTooLarge(
    `mapping "${m.id}": the actions of this request carry more than ${m.maxActionBytes} bytes of text (its maxActionBytes); nothing was done`,
  );
}
