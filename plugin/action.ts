// What a request asks for, once read: the types the endpoints, the mappings and the executor share.
import type { AcceptedRun, ChannelName } from './host.ts';

export type WakeMode = 'now' | 'next-heartbeat';

export interface WakeSpec {
  /** Safe to hand on: sanitized, or wrapped as untrusted content by a mapping. */
  text: string;
  mode: WakeMode;
  /** wake, or the mapping's name */
  hook: string;
}

/** A channel a reply falls back to: its name (to its defaultTo), or the channel and the recipient. */
export type FallbackChannel = ChannelName | { channel: ChannelName; to?: string };

/** How a run goes: what an /agent body, a mapping and a transform may each say. */
export interface RunOptions {
  wakeMode?: WakeMode;
  deliver?: boolean;
  channel?: 'last' | ChannelName;
  to?: string;
  /** Where the reply goes, in order, when the delivery to `channel` failed for good (not a transform's). */
  fallbackChannels?: FallbackChannel[];
  model?: string;
  thinking?: string;
  timeoutSeconds?: number;
}

/** What an agent action asks for, from a request body, a mapping or a preset. */
export interface AgentSpec extends RunOptions {
  message: string;
  name?: string;
  agentId?: string;
  /** sessionKey from the request body: subject to hooks.allowRequestSessionKey. */
  requestSessionKey?: string;
  /** sessionKey from a mapping: subject only to the prefixes. */
  mappingSessionKey?: string;
  /** Only a mapping can set this; a request body never can. */
  allowUnsafeExternalContent?: boolean;
  /** The message is already wrapped (a preset may wrap it as what it is, e.g. email). */
  alreadyWrapped?: boolean;
  source: string;
  /** Chosen at a door (hooks.queue): the run keeps the id its request was answered with. */
  runId?: string;
}

/** An accepted run (the host contract's AcceptedRun). */
export type AgentJob = AcceptedRun;

/**
 * What a hook request does once it is read, whoever produced it (an endpoint or a mapping): events
 * for the main session and agent runs. Neither: the request is skipped (204).
 */
export interface Action {
  wakes: WakeSpec[];
  runs: AgentSpec[];
  /** Made by a mapping's forEach, one per item: a wake answer counts them. */
  fanOut?: boolean;
  /** The /agent body asked to be answered once its run ended (a mapping says so in its config). */
  waitForCompletion?: boolean;
}

export const SKIP: Action = Object.freeze({
  wakes: Object.freeze([]) as unknown as WakeSpec[],
  runs: Object.freeze([]) as unknown as AgentSpec[],
});

/** What the executor answers: a status and a JSON body (none for 204). */
export interface Outcome {
  status: number;
  body?: Record<string, unknown>;
}
