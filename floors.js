// The core's floors, lowest first (docs/reference/architecture.md, Layout). A room is a folder of
// plugin/ (written with its slash) or a top-level file of it; plugin/hosts/ stands on no floor. A room
// imports only rooms on lower floors, type imports included; files of one room import each other freely.
// eslint.config.js makes its import-x/no-restricted-paths zones from this list, and
// test/unit/floors.test.ts checks it against plugin/, the doc and the imports.
export const FLOORS = [
  // 1. the host contract, the error catalogue, the settings every room reads
  ['host.ts', 'errors.ts', 'settings/'],
  // 2. the core's vocabulary (Action, AgentSpec, Outcome), leaf helpers, metrics, Redis
  ['action.ts', 'util/', 'observe/', 'redis/'],
  // 3. the wire, tokens and the limiter, the keys kept, the content wrapper, the transform sandbox,
  // retries, the request log on disk, the queue on Redis
  ['http/', 'auth/', 'dedupe/', 'safety/', 'transforms/', 'retry/', 'request-log/', 'queue/'],
  // 4. signed senders; the reply queue
  ['verify/', 'replies/'],
  // 5. the run service, its retries, outcomes and waiters; what hooks may spend
  ['runs/', 'budgets/'],
  // 6. wake/agent payloads and the executor; mappings; the failure book and replay
  ['actions/', 'mappings/', 'failures/'],
  // 7. one hook request's phases; pausing a hook and its held actions
  ['request/', 'pauses/'],
  // 8. a config file becomes a snapshot; the admin routes every host serves; the owner's web page
  ['config/', 'admin/', 'console/'],
  // 9. the live assembly; the dry assembly
  ['index.ts', 'dry-run.ts'],
  // 10. the doors hosts use
  ['host-kit.ts', 'kits/'],
];
