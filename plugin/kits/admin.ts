// For a host serving the core's admin routes and keeping work of its own after the 200 (the
// standalone's channel deliveries): the admin call's shape, and the retry schedule the core uses.
export type { AdminCall } from '../after/admin-call.ts';
export { mayRetry, retryDelayMs, type RetryPolicy } from '../after/retry-policy.ts';
export { DueQueue } from '../after/due-queue.ts';
export { StateFile } from '../after/state-file.ts';
