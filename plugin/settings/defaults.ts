// The values the hooks block takes when a key is left out.

export const DEFAULTS = Object.freeze({
  path: '/hooks',
  maxBodyBytes: 262_144,
  bodyTimeoutSeconds: 30,
  authRateLimit: Object.freeze({ maxFailures: 20, windowSeconds: 60, lockoutSeconds: 60, rotationGraceSeconds: 300 }),
  maxConcurrentRuns: 8,
  maxQueuedRuns: 1000,
  transformTimeoutMs: 2000,
  /** Three days: Stripe and Standard Webhooks senders retry for about that long. */
  dedupe: Object.freeze({ windowSeconds: 259_200, maxKeys: 100_000 }),
  sharedStateKeyPrefix: 'hookgate:',
  queue: Object.freeze({ name: 'hookgate', leaseSeconds: 30, maxWaiting: 100_000, timeoutMs: 2000 }),
  retry: Object.freeze({ attempts: 5, initialDelaySeconds: 10, maxDelaySeconds: 3600 }),
  maxWaitSeconds: 120,
  /** Requests waiting for their runs at once: each holds a connection (a descriptor) meanwhile. */
  maxWaitingRequests: Object.freeze({ total: 256, perClient: 32 }),
  maxHeld: 10_000,
  /** 1 GiB. */
  maxHeldBytes: 1_073_741_824,
  /** A week: a run's own hook session is kept that long after the run ended. */
  sessionRetentionSeconds: 604_800,
  /** The owner's web page: on, a login lasting half a day. */
  console: Object.freeze({ enabled: true, sessionHours: 12 }),
  requestLog: Object.freeze({ maxEntries: 100_000, retainDays: 7 }),
  /** agents.defaults.timeoutSeconds when the host has none. */
  runTimeoutSeconds: 600,
});
