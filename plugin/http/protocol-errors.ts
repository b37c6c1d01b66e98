// Answers for what Node's HTTP parser refuses before any handler runs (malformed requests, oversized
// headers, header timeouts, unknown Expect values), in the same JSON error shape as everything else.
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { sendJson } from './respond.ts';

function describe(err: NodeJS.ErrnoException): { status: number; code: string; error: string } {
  if (err.code === 'HPE_HEADER_OVERFLOW') return { status: 431, code: 'headers_too_large', error: 'the request headers are too large' };
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return { status: 408, code: 'request_timeout', error: 'the request headers did not arrive in time' };
  // The client shut down its side of the connection partway through the request.
  if (err.code === 'HPE_INVALID_EOF_STATE') return { status: 400, code: 'bad_request', error: 'the connection was closed before the whole request was sent' };
  return { status: 400, code: 'bad_request', error: 'the request is not valid HTTP/1.1' };
}

/** For server.on('clientError'): a JSON answer when the socket can still take one, then close. */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const { status, code, error } = describe(err);
  const body = JSON.stringify({ ok: false, error, code });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/** For server.on('checkExpectation'): any Expect other than 100-continue. */
export function answerExpectation(_req: IncomingMessage, res: ServerResponse): void {
  sendJson(res, 417, { ok: false, error: 'only "Expect: 100-continue" is supported', code: 'expectation_failed' }, { connection: 'close' });
}
