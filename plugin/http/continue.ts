// "Expect: 100-continue": the client waits for a 100 before it sends its body. Node sends the 100 by
// itself as soon as the headers arrive, unless the server listens for 'checkContinue'; a host that
// does hands such requests in through deferContinue(), and the pipeline sends the 100 only when it is
// about to read the body. A refusal decided before then (401, 404, 413 by Content-Length, 429) goes
// out instead of the 100, so the client never uploads a body that would be thrown away.
import type { IncomingMessage, ServerResponse } from 'node:http';

const awaiting = new WeakSet<IncomingMessage>();

/** For a host's 'checkContinue' listener, before it hands the request to handle(). */
export function deferContinue(req: IncomingMessage): void {
  awaiting.add(req);
}

/** Just before the body is read: the 100 the client is waiting for, if it is. */
export function sendContinue(req: IncomingMessage, res: ServerResponse): void {
  if (awaiting.delete(req)) res.writeContinue();
}
