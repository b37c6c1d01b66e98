// What the bench sends: the gateways it starts (by name) and the scenarios it drives against them.
import { createHmac } from 'node:crypto';
import { HOOK_TOKEN } from './processes.ts';
import type { Load } from './drive.ts';

const GITHUB_SECRET = 'bench-github-webhook-secret-0123';
const githubBody = JSON.stringify({
  action: 'completed',
  workflow_run: {
    name: 'CI',
    head_branch: 'main',
    conclusion: 'success',
    html_url: 'https://github.com/o/r/actions/runs/1',
  },
  repository: { full_name: 'o/r' },
  sender: { login: 'ada' },
});
/** What GitHub sends: the body's HMAC-SHA256 in X-Hub-Signature-256, the delivery and event names. */
const githubHeaders = {
  'content-type': 'application/json',
  'x-github-event': 'workflow_run',
  'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958',
  'x-hub-signature-256': `sha256=${createHmac('sha256', GITHUB_SECRET).update(githubBody).digest('hex')}`,
};

export const GITHUB_TEMPLATE =
  '{{repository.full_name}}: {{workflow_run.name}} on {{workflow_run.head_branch}} {{workflow_run.conclusion}} ({{headers.x-github-event}})';
/** The signed row's mapping (also the plugin's inside OpenClaw, bench/openclaw-peer.ts). */
export const GITHUB_MAPPING = {
  id: 'github',
  match: { path: 'github' },
  action: 'wake',
  wakeMode: 'next-heartbeat',
  textTemplate: GITHUB_TEMPLATE,
  verify: { scheme: 'github', secret: GITHUB_SECRET },
};

const MAPPINGS = [
  {
    id: 'tpl',
    match: { path: 'tpl' },
    action: 'wake',
    wakeMode: 'next-heartbeat',
    textTemplate: 'CI {{pipeline.name}} #{{pipeline.run}}: {{status}} by {{actor.login}} ({{headers.x-ci}})',
  },
  {
    // The template row's mapping behind three conditions that hold: what filters cost.
    id: 'tpl3',
    match: {
      path: 'tpl3',
      headers: { 'x-ci': { prefix: 'ci-' } },
      body: { status: { in: ['green', 'red'] }, 'pipeline.name': 'api' },
    },
    action: 'wake',
    wakeMode: 'next-heartbeat',
    textTemplate: 'CI {{pipeline.name}} #{{pipeline.run}}: {{status}} by {{actor.login}} ({{headers.x-ci}})',
  },
  // Used up by the warm-up: every measured request is over the limit.
  {
    id: 'limited',
    match: { path: 'limited' },
    action: 'wake',
    textTemplate: 'limited',
    rateLimit: { requests: 1, perSeconds: 86400 },
  },
  // Its one run goes in the warm-up: every measured request is over budget, kept for the digest.
  {
    id: 'over',
    match: { path: 'over' },
    action: 'agent',
    messageTemplate: 'over budget {{n}}',
    deliver: false,
    budget: { runs: 1, perSeconds: 86400, overflow: 'digest' },
  },
  { id: 'tr', match: { path: 'tr' }, action: 'wake', wakeMode: 'next-heartbeat', transform: { module: 'bench.ts' } },
  GITHUB_MAPPING,
];

/** A gateway the bench starts: its `hooks` block and its `gateway` keys. */
export interface GatewaySpec {
  hooks: Record<string, unknown>;
  gateway?: Record<string, unknown>;
  /** Shares its state on a Redis server the bench starts (hooks.sharedState). */
  redis?: boolean;
  /** Hooks paused through the admin API once it is up. */
  paused?: string[];
  /** A live tail of the request log (the console's) held open while it is driven. */
  tail?: boolean;
  /** Its `storage` block (storage.fsync). */
  storage?: Record<string, unknown>;
}

// maxFailures is high so the 401 scenario stays 401.
const MAIN_HOOKS = {
  maxBodyBytes: 1024 * 1024,
  authRateLimit: { maxFailures: 1_000_000, windowSeconds: 1, lockoutSeconds: 1 },
  mappings: MAPPINGS,
};

/** The gateways, by name. `main` serves most rows; `locked` has locked one address. */
export const GATEWAYS: Record<string, GatewaySpec> = {
  main: { hooks: MAIN_HOOKS },
  locked: { hooks: { authRateLimit: { maxFailures: 1, windowSeconds: 60, lockoutSeconds: 3600 } } },
  // The main gateway without counting: what metrics cost.
  'metrics off': { hooks: MAIN_HOOKS, gateway: { metrics: { enabled: false } } },
  // The main gateway sharing lockouts and dedupe keys on Redis: what sharing costs.
  'redis on': { hooks: MAIN_HOOKS, redis: true },
  // The main gateway with the console's live tail open: what watching costs.
  'live tail open': { hooks: MAIN_HOOKS, tail: true },
  // The main gateway (storage.fsync "interval", the default) syncing never, or before every answer.
  'fsync never': { hooks: MAIN_HOOKS, storage: { fsync: 'never' } },
  'fsync always': { hooks: MAIN_HOOKS, storage: { fsync: 'always' } },
  // The main gateway with /hooks/wake paused: every request held (room for a whole run of them).
  paused: { hooks: { ...MAIN_HOOKS, maxHeld: 2_000_000 }, paused: ['wake'] },
};

/** The address the `locked` gateway (and the OpenClaw peer) has locked, sent as X-Forwarded-For. */
export const LOCKED_ADDRESS = '203.0.113.9';

/** Which of OpenClaw's built-in hook rows a scenario is compared with. */
export type PeerRow = 'wake' | 'agent' | '401' | '429' | 'github';

export interface Scenario {
  name: string;
  load: Load;
  /** Which gateway of GATEWAYS serves it. */
  gateway: string;
  connections: number;
  /** Ratio to bare the issue asks for (undefined: reported only). */
  goal?: number;
  expect: number;
  peer?: PeerRow;
  /** Other gateways (of GATEWAYS) driven with the same load in the same rounds: the cost of a feature. */
  variants?: string[];
}

const bearer = (t: string) => ({ authorization: `Bearer ${t}`, 'content-type': 'application/json' });
const WAKE = '{"text":"bench event","mode":"next-heartbeat"}';
let keySeq = 0;
/** A key never sent before (the bare server reads the same header). */
const freshKey = (headers: Record<string, string>) => ({ ...headers, 'idempotency-key': `bench-${++keySeq}` });
const newDelivery = (headers: Record<string, string>) => ({ ...headers, 'x-github-delivery': `bench-${++keySeq}` });
const wake = (connections: number, goal?: number): Scenario => ({
  name: connections === 32 ? 'wake (next-heartbeat)' : `wake, ${connections} connection${connections > 1 ? 's' : ''}`,
  load: { path: '/hooks/wake', body: WAKE, headers: bearer(HOOK_TOKEN) },
  gateway: 'main',
  connections,
  goal,
  expect: 200,
  peer: connections === 32 ? 'wake' : undefined,
  variants:
    connections === 32 ? ['metrics off', 'redis on', 'live tail open', 'fsync never', 'fsync always'] : undefined,
});

export const SCENARIOS: Scenario[] = [
  wake(32, 0.8),
  wake(1),
  wake(256),
  {
    // Held actions per second, beside the same wakes acted on at once (the main gateway) in the same rounds.
    name: 'wake, hook paused (held)',
    load: { path: '/hooks/wake', body: WAKE, headers: bearer(HOOK_TOKEN) },
    gateway: 'paused',
    connections: 32,
    expect: 202,
    variants: ['main'],
  },
  {
    name: 'agent accept (echo, deliver off)',
    load: { path: '/hooks/agent', body: '{"message":"bench run","deliver":false}', headers: bearer(HOOK_TOKEN) },
    gateway: 'main',
    connections: 32,
    goal: 0.5,
    expect: 202,
    peer: 'agent',
  },
  {
    name: 'agent over budget (digested)',
    load: { path: '/hooks/over', body: '{"n":1}', headers: bearer(HOOK_TOKEN) },
    gateway: 'main',
    connections: 32,
    expect: 202,
  },
  {
    name: 'mapped hook + template',
    load: {
      path: '/hooks/tpl',
      body: '{"pipeline":{"name":"api","run":812},"status":"green","actor":{"login":"ada"}}',
      headers: { ...bearer(HOOK_TOKEN), 'x-ci': 'ci-1' },
    },
    gateway: 'main',
    connections: 32,
    goal: 0.7,
    expect: 200,
  },
  {
    name: 'mapped hook, three conditions + template',
    load: {
      path: '/hooks/tpl3',
      body: '{"pipeline":{"name":"api","run":812},"status":"green","actor":{"login":"ada"}}',
      headers: { ...bearer(HOOK_TOKEN), 'x-ci': 'ci-1' },
    },
    gateway: 'main',
    connections: 32,
    expect: 200,
  },
  {
    name: 'GitHub-signed mapped hook + template',
    // A new delivery id each time (the default dedupe key); the signature covers the body only.
    load: { path: '/hooks/github', body: githubBody, headers: githubHeaders, vary: newDelivery },
    gateway: 'main',
    connections: 32,
    goal: 0.6,
    expect: 200,
    peer: 'github',
  },
  {
    name: 'mapped hook + transform',
    load: { path: '/hooks/tr', body: '{"service":"api","status":"done"}', headers: bearer(HOOK_TOKEN) },
    gateway: 'main',
    connections: 32,
    goal: 0.4,
    expect: 200,
  },
  {
    name: 'wake with a fresh Idempotency-Key each',
    load: { path: '/hooks/wake', body: WAKE, headers: bearer(HOOK_TOKEN), vary: freshKey },
    gateway: 'main',
    connections: 32,
    goal: 0.7,
    expect: 200,
    variants: ['redis on'],
  },
  {
    name: 'wake, one Idempotency-Key repeated (duplicates)',
    load: { path: '/hooks/wake', body: WAKE, headers: { ...bearer(HOOK_TOKEN), 'idempotency-key': 'bench-repeated' } },
    gateway: 'main',
    connections: 32,
    goal: 0.85,
    expect: 200,
    variants: ['redis on'],
  },
  {
    name: '401 wrong token',
    load: { path: '/hooks/wake', body: '{"text":"x"}', headers: bearer('wrong-token') },
    gateway: 'main',
    connections: 32,
    goal: 0.85,
    expect: 401,
    variants: ['redis on'],
    peer: '401',
  },
  {
    name: '429 locked address',
    load: {
      path: '/hooks/wake',
      body: '{"text":"x"}',
      headers: { ...bearer(HOOK_TOKEN), 'x-forwarded-for': LOCKED_ADDRESS },
    },
    gateway: 'locked',
    connections: 32,
    goal: 0.9,
    expect: 429,
    peer: '429',
  },
  {
    name: '429 hook rate limited',
    load: { path: '/hooks/limited', body: '{"text":"x"}', headers: bearer(HOOK_TOKEN) },
    gateway: 'main',
    connections: 32,
    expect: 429,
  },
  {
    name: '200 KB body (wake)',
    load: {
      path: '/hooks/wake',
      body: JSON.stringify({ text: `large payload ${'x'.repeat(200 * 1024)}`, mode: 'next-heartbeat' }),
      headers: bearer(HOOK_TOKEN),
    },
    gateway: 'main',
    connections: 32,
    expect: 200,
  },
];

/** A delivery row: agent replies to `chats` different chats of one platform, paced (bench/deliveries.ts). */
export interface DeliveryRowSpec {
  name: string;
  platform: 'telegram' | 'slack';
  chats: number;
  firstChat: number;
}

export const DELIVERY_ROWS: DeliveryRowSpec[] = [
  // Telegram paces 30 a second for the whole bot: the row shows the pace held right under it.
  {
    name: 'replies to 1,000 chats, paced (telegram, 30/s per bot)',
    platform: 'telegram',
    chats: 1000,
    firstChat: 100000,
  },
  // Slack paces per channel only: the row shows what the gateway itself delivers.
  { name: 'replies to 1,000 chats, paced (slack, 1/s per channel)', platform: 'slack', chats: 1000, firstChat: 200000 },
];
