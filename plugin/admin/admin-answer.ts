// Writing an admin answer, the same for every host: JSON with its status, or an answer that stays
// open (AdminStream) as server-sent events: the headers at once, each event as `event:` and one `data:` line of JSON, a comment every
// 15 s so proxies and browsers keep the connection, and the stream stopped when the client goes. A
// client that stops reading is dropped once its unsent events pass a bound, so it never holds memory.
import type { ServerResponse } from 'node:http';
import { writeJson } from '../http/answers.ts';
import { AdminAnswer, AdminStream, JsonText } from './admin-call.ts';

export const KEEPALIVE_MS = 15_000;
/** Bytes waiting for a slow client before it is dropped. */
const MAX_UNSENT_BYTES = 1024 * 1024;
/** Events are gathered this long and go out in one write: a person watching sees no delay. */
export const GATHER_MS = 100;
/**
 * Events one write carries at most (500 a second): past it they are counted, and the write ends with
 * one "skipped" event saying how many. Nobody reads faster, and a flood's tail would cost its hook
 * path the sends of every event (the request log's pages have them all).
 */
export const MAX_EVENTS_PER_WRITE = 50;

/** Resolves when the client has gone (a host whose handler must stay pending awaits it). */
export function serveAdminStream(res: ServerResponse, stream: AdminStream): Promise<void> {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    // Proxies that buffer answers (nginx) pass this one through as it comes.
    'x-accel-buffering': 'no',
  });
  res.write(': hookgate live\n\n');
  return new Promise((resolve) => {
    let open = true;
    // The events of GATHER_MS go out in one write: a write per request made a busy hook path slower.
    let unsent: string[] = [];
    let unsentBytes = 0;
    let skipped = 0;
    const flush = (): void => {
      if (skipped) unsent.push(`event: skipped\ndata: {"count":${skipped}}\n\n`);
      const text = unsent.join('');
      unsent = [];
      unsentBytes = 0;
      skipped = 0;
      if (open) res.write(text);
    };
    const send = (event: string, data: unknown): boolean => {
      if (!open) return false;
      if (res.writableLength + unsentBytes > MAX_UNSENT_BYTES) {
        res.destroy();
        return false;
      }
      if (unsent.length >= MAX_EVENTS_PER_WRITE) {
        skipped++;
        return true;
      }
      // JSON.stringify escapes line breaks inside strings: the data is one line.
      const json = data instanceof JsonText ? data.text : JSON.stringify(data);
      const frame = `event: ${event}\ndata: ${json}\n\n`;
      unsentBytes += frame.length;
      if (unsent.push(frame) === 1) setTimeout(flush, GATHER_MS).unref();
      return true;
    };
    const stop = stream.open(send);
    const beat = setInterval(() => {
      if (res.writableLength <= MAX_UNSENT_BYTES) res.write(': keep-alive\n\n');
    }, KEEPALIVE_MS);
    beat.unref();
    const close = (): void => {
      if (!open) return;
      open = false;
      clearInterval(beat);
      stop();
      resolve();
    };
    res.once('close', close);
  });
}

/** A core route's answer on the wire; resolves once it is written (a stream: once its client went). */
export async function writeAdminAnswer(res: ServerResponse, answer: unknown): Promise<void> {
  if (answer instanceof AdminStream) await serveAdminStream(res, answer);
  else if (answer instanceof AdminAnswer) writeJson(res, answer.status, answer.body);
  else writeJson(res, 200, answer);
}
