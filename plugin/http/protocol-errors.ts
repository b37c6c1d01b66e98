// Answers for what Node's HTTP parser refuses before any handler runs (malformed requests, oversized
// headers, header timeouts, unknown Expect values), in the same JSON error shape as everything else.
// A request gets one answer, always: when the parser fails on a connection whose request in hand has
// an answer coming, that answer goes out (then the connection closes) instead of a second one.
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { HookError, refuse } from '../errors.ts';
import { errorBody, writeError } from './answers.ts';

function describe(err: NodeJS.ErrnoException): HookError {
  if (err.code === 'HPE_HEADER_OVERFLOW') return refuse.headersTooLarge();
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return refuse.requestTimeout();
  // The client shut down its side of the connection partway through the request.
  if (err.code === 'HPE_INVALID_EOF_STATE') {
    return refuse.badRequest('the connection was closed before the whole request was sent');
  }
  return refuse.badRequest('the request is not valid HTTP/1.1');
}

/** The response Node is writing on this connection, if any (an undocumented but long-standing field). */
function currentResponse(socket: Duplex): ServerResponse | undefined {
  return (socket as { _httpMessage?: ServerResponse })._httpMessage ?? undefined;
}

/** For server.on('clientError'): one JSON answer when the socket can still take one, then close. */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const refusal = describe(err);
  const res = currentResponse(socket);
  if (res && !res.writableFinished) {
    if (!res.headersSent && !res.req.complete) {
      // The fault is in the request in hand (its body): that is its answer.
      writeError(res, refusal.closing());
    } else {
      // The request in hand was whole and keeps its answer; what follows it is not read.
      if (!res.headersSent) res.setHeader('connection', 'close');
      res.once('finish', () => socket.destroy());
    }
    return;
  }
  const body = JSON.stringify(errorBody(refusal));
  socket.end(
    `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status]}\r\ncontent-type: application/json; charset=utf-8\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/** For server.on('checkExpectation'): any Expect other than 100-continue. */
export function answerExpectation(_req: IncomingMessage, res: ServerResponse): void {
  writeError(res, refuse.expectationFailed());
}
