// The admin API's requests as the hosts read them off the wire (the standalone under /api/, OpenClaw
// under /hookgate/api/): the AdminCall of a request and its JSON body, bounded in size and time. The
// host authenticates the caller before any of it.
import type { IncomingMessage } from 'node:http';
import { refuse } from '../errors.ts';
import type { AdminCall } from './admin-call.ts';

/** The largest admin request body: admin calls carry a few fields. */
export const MAX_ADMIN_BODY = 65_536;
/** An admin body still arriving after this is given up (a slow client holds nothing for long). */
export const ADMIN_BODY_TIMEOUT_MS = 10_000;

/** One path segment, percent-decoded; bad encoding is a 400. */
function decodePart(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw refuse.badRequest('the path is not valid percent-encoding');
  }
}

/** The call for `rest`, the path and query after the API's prefix (e.g. "failures?limit=5"). */
export function adminCallOf(req: IncomingMessage, rest: string): AdminCall {
  const q = rest.indexOf('?');
  const pathname = q < 0 ? rest : rest.slice(0, q);
  return {
    method: req.method ?? 'GET',
    parts: pathname.split('/').map(decodePart),
    query: new URLSearchParams(q < 0 ? '' : rest.slice(q + 1)),
    body: () => readAdminBody(req),
  };
}

/** The request's JSON body (undefined when empty): too large is a 413, too slow a 408, not JSON a 400. */
export async function readAdminBody(req: IncomingMessage, timeoutMs = ADMIN_BODY_TIMEOUT_MS): Promise<unknown> {
  if (Number(req.headers['content-length']) > MAX_ADMIN_BODY) throw refuse.payloadTooLarge(MAX_ADMIN_BODY);
  const read = (async () => {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_ADMIN_BODY) throw refuse.payloadTooLarge(MAX_ADMIN_BODY);
      chunks.push(chunk);
    }
    return Buffer.concat(chunks).toString('utf8').trim();
  })();
  // A late body is answered (the 408 closes the connection); its read ends with the socket.
  read.catch(() => {});
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(refuse.bodyTimeout(timeoutMs)), timeoutMs);
  });
  let text: string;
  try {
    text = await Promise.race([read, late]);
  } finally {
    clearTimeout(timer);
  }
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw refuse.badRequest('the body is not valid JSON');
  }
}
