// Streaming body reader: refuses a declared length over the limit before reading, cuts a chunked
// body off at the limit, and gives up when the whole body has not arrived in time.
import type { IncomingMessage } from 'node:http';
import { HookError } from '../errors.ts';

const CLOSE = Object.freeze({ connection: 'close' });

export function tooLarge(limit: number): HookError {
  return new HookError(413, 'payload_too_large', `body is larger than ${limit} bytes`, CLOSE);
}

/** Throws at once (not a rejected promise) when the declared length is over the limit. */
export function readBody(req: IncomingMessage, limit: number, timeoutMs: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) throw tooLarge(limit);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (err?: HookError): void => {
      clearTimeout(timer);
      req.removeListener('data', onData);
      req.removeListener('end', onEnd);
      req.removeListener('error', onAbort);
      req.removeListener('close', onAbort);
      if (err) {
        // Stop reading what is left; the response closes the connection.
        req.pause();
        reject(err);
      } else resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) finish(tooLarge(limit));
      else chunks.push(chunk);
    };
    const onEnd = (): void => finish();
    const onAbort = (): void =>
      finish(new HookError(400, 'invalid_json', 'the request body was cut off by the client', CLOSE));
    const timer = setTimeout(
      () => finish(new HookError(408, 'body_timeout', `the body was not received within ${timeoutMs / 1000} s`, CLOSE)),
      timeoutMs,
    );
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onAbort);
    req.once('close', onAbort);
  });
}

/** The body as a JSON object, whatever its Content-Type. */
export function parseJsonObject(body: Buffer): Record<string, unknown> {
  if (body.length === 0) throw new HookError(400, 'invalid_json', 'the body is empty; send a JSON object');
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw new HookError(400, 'invalid_json', 'the body is not valid JSON');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new HookError(400, 'invalid_json', 'the body must be a JSON object');
  }
  return value as Record<string, unknown>;
}
