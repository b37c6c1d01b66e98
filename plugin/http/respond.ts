// Every answer is JSON (errors too): { ok:false, error, code }.
import type { ServerResponse } from 'node:http';
import { HookError } from '../errors.ts';

const JSON_TYPE = 'application/json; charset=utf-8';

/** One writeHead with every header: cheaper than a setHeader per header on the hot path. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers?: Readonly<Record<string, string>>,
  requestId?: string,
): void {
  if (res.headersSent) return;
  const text = JSON.stringify(body);
  const all: Record<string, string | number> = { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(text) };
  if (requestId !== undefined) all['x-request-id'] = requestId;
  if (headers) for (const name in headers) all[name] = headers[name]!;
  res.writeHead(status, all);
  res.end(text);
}

export function sendEmpty(res: ServerResponse, status: number, requestId?: string): void {
  if (res.headersSent) return;
  res.writeHead(status, requestId === undefined ? {} : { 'x-request-id': requestId });
  res.end();
}

export function sendError(res: ServerResponse, err: HookError, requestId?: string): void {
  sendJson(res, err.status, { ok: false, error: err.message, code: err.code }, err.headers, requestId);
}

export function internalError(): HookError {
  return new HookError(500, 'internal_error', 'internal error; the request was not processed');
}
