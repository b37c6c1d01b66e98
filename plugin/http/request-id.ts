// Cheap unique request ids: a random per-process prefix and a counter.
import { randomBytes } from 'node:crypto';

const prefix = randomBytes(4).toString('hex');
let counter = 0;

export function requestId(): string {
  counter = (counter + 1) % Number.MAX_SAFE_INTEGER;
  return `${prefix}-${counter.toString(36)}`;
}
