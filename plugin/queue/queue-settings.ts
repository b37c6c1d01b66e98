// hooks.queue as the queue reads it: apart from action-queue.ts so the config can name it without
// loading the Redis client.

/** hooks.queue as the queue reads it. */
export interface QueueSettings {
  /** May carry a password: never logged nor answered. */
  readonly url: string;
  readonly name: string;
  readonly keyPrefix: string;
  readonly leaseMs: number;
  readonly maxWaiting: number;
  readonly timeoutMs: number;
}
