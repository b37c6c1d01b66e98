// Every answer is JSON (errors too): { ok:false, error, code }.
import type { ServerResponse } from 'node:http';
import { HookError } from '../errors.ts';

const JSON_TYPE = 'application/json; charset=utf-8';

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers?: Readonly<Record<string, string>>,
): void {
  if (res.headersSent) return;
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('content-type', JSON_TYPE);
  res.setHeader('content-length', Buffer.byteLength(text));
  if (headers) for (const name in headers) res.setHeader(name, headers[name]!);
  res.end(text);
}

export function sendEmpty(res: ServerResponse, status: number): void {
  if (res.headersSent) return;
  res.statusCode = status;
  res.end();
}

export function sendError(res: ServerResponse, err: HookError): void {
  sendJson(res, err.status, { ok: false, error: err.message, code: err.code }, err.headers);
}

export function internalError(): HookError {
  return new HookError(500, 'internal_error', 'internal error; the request was not processed');
}
