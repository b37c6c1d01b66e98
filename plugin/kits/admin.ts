// For a host serving the core's admin routes and keeping work of its own after the 200 (the
// standalone's and OpenClaw's channel deliveries): the admin call's shape and how a request becomes
// one, and the retry schedule the core uses.
export { AdminAnswer, type AdminCall } from '../admin/admin-call.ts';
export type { DeliveryFailureInput } from '../failures/failures.ts';
export { mayRetry, retryDelayMs, type RetryPolicy } from '../retry/retry-policy.ts';
export { DueQueue } from '../retry/due-queue.ts';
export { StateFile } from '../util/state-file.ts';
export { adminCallOf, requestsLimit } from '../admin/admin-http.ts';
