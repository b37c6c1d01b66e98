// The door every host uses: the plugin itself, the error catalogue and the answer writer, and the
// status view both hosts serve. The host contract (the types a host implements) is plugin/host.ts;
// a host on node:http adds plugin/kits/node-http.ts, a config tool or CLI plugin/kits/config.ts.
// Hosts import the core from these and plugin/util/ only (lint zones say so), and the core never
// imports a host. test/unit/host-kit.test.ts keeps this door at most 20 names.
export { createHooksPlugin, type HooksPlugin } from './index.ts';
export type { HandleOptions } from './request/lifecycle.ts';
export type { HooksSnapshot } from './request/snapshot.ts';
export { ConfigError, HookError, refuse } from './errors.ts';
export { writeError, writeJson } from './http/answers.ts';
export type { HookMetrics } from './observe/metrics.ts';
export { REQUESTS_PAGE_MAX, type RequestEntry } from './request-log/entry.ts';
export type { RequestLog } from './request-log/request-log.ts';
export {
  hooksStatus,
  recentRequests,
  validRequestsLimit,
  type HooksStatus,
  type RequestsQuery,
} from './admin/status-view.ts';
export { keepFairly } from './dedupe/fair-share.ts';
