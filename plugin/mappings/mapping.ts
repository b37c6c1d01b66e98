// A mapping as the request path uses it: templates compiled, policies checked, transform confined.
import type { ChannelName, GatewayHost } from '../host.ts';
import type { Action, FallbackChannel, WakeMode } from '../action.ts';
import type { Template } from './template.ts';
import type { Verifier } from '../verify/verifier.ts';
import type { Handshake } from './handshake.ts';
import type { Respond } from './respond.ts';
import type { MappingFilter } from './filters.ts';
import type { AddressList } from '../http/address-list.ts';
import type { HookRateLimit } from '../auth/hook-rate-limit.ts';
import type { Budget } from '../budgets/budget.ts';

export type BodyFormat = 'json' | 'form' | 'multipart';

export interface CompiledMapping {
  readonly id: string;
  /** Where it came from, for messages: hooks.mappings[2] (id "github") */
  readonly where: string;
  readonly matchPath?: string;
  readonly matchSource?: string;
  /** match.headers, match.body and match.events: all must hold for the mapping to take a request. */
  readonly filter?: MappingFilter;
  /** allowedSources: the addresses its name admits (within hooks.allowedSources). */
  readonly allowedSources?: AddressList;
  /** rateLimit: how many requests its name admits over a window. */
  readonly rateLimit?: HookRateLimit;
  readonly action: 'wake' | 'agent';
  /** budget: what its runs may spend over a window, and what becomes of the rest. */
  readonly budget?: Budget;
  /** coalesce: requests with the same key within `seconds` of the first, up to `maxItems`, are one run. */
  readonly coalesce?: { readonly seconds: number; readonly maxItems: number; readonly key?: Template };
  readonly name: string;
  readonly wakeMode?: WakeMode;
  readonly text?: Template;
  readonly message?: Template;
  readonly sessionKey?: Template;
  readonly agentId?: Template;
  readonly deliver?: boolean;
  /** maxConcurrentRuns: its runs at once, within hooks.maxConcurrentRuns. */
  readonly maxConcurrentRuns?: number;
  /** The answer waits for the runs' outcomes (the config's choice; a transform cannot turn it on). */
  readonly waitForCompletion?: boolean;
  readonly channel?: 'last' | ChannelName;
  readonly to?: Template;
  /** fallbackChannels: the mapping's own (a transform cannot change them). */
  readonly fallbackChannels?: readonly FallbackChannel[];
  readonly model?: Template;
  readonly thinking?: string;
  readonly timeoutSeconds?: number;
  readonly maxBodyBytes?: number;
  /** The most bytes of text (wake texts, run messages) one request's actions may carry. */
  readonly maxActionBytes: number;
  readonly allowUnsafeExternalContent: boolean;
  readonly transform?: { readonly file: string; readonly exportName: string };
  /** A preset's built-in producer: its actions are built in code, not by templates or a transform. */
  readonly producer?: Producer;
  /** How the body is read: JSON whatever the Content-Type, a urlencoded form, or multipart/form-data. */
  readonly bodyFormat: BodyFormat;
  /** With multipart: the most parts a body may have. */
  readonly maxParts: number;
  /** How the sender proves the endpoint before it sends (see handshake.ts). */
  readonly handshake?: Handshake;
  /** The answer when the action is accepted, instead of the usual one. */
  readonly respond?: Respond;
  /** Set when the sender proves itself by signature or credential instead of the hook token. */
  readonly verifier?: Verifier;
  /** Headers no template or transform sees: credentials, and this mapping's proof headers. */
  readonly hiddenHeaders: ReadonlySet<string>;
  /** dedupe.key: the request's idempotency key, rendered from it. */
  readonly dedupeKey?: Template;
  /** forEach: reads the array of items from the payload; one action per item. */
  readonly forEach?: { readonly path: string; readonly read: (payload: unknown) => unknown; readonly maxItems: number };
}

/** Which mappings may own a hook name, built once per config. */
export interface MappingIndex {
  /** For each match.path: the mappings that could own it, in config order. */
  readonly byName: ReadonlyMap<string, readonly CompiledMapping[]>;
  /** For any other name: the mappings without match.path. */
  readonly anyName: readonly CompiledMapping[];
}

/**
 * What a preset builds its actions with (a transform that ships with the plugin, in effect). `items`
 * checks the whole payload before any item acts; `build` makes the action of the whole payload or of
 * one forEach item.
 */
export interface Producer {
  /** The preset's name, as hooks.presets lists it. */
  readonly name: string;
  checkItems(payload: Record<string, unknown>): void;
  build(payload: Record<string, unknown>, mapping: CompiledMapping, item?: { readonly item: unknown }): Action;
}

/** A preset of hooks.presets: a mapping that ships with the plugin, registered by name (presets.ts). */
export interface Preset {
  readonly name: string;
  /** Its mapping when its block sets nothing (a sender's tools read its limits). */
  readonly mapping: CompiledMapping;
  /** The preset's mapping under this config; what the config gets wrong goes to `problems`, naming the key. */
  compile(context: PresetContext, problems: string[]): CompiledMapping;
}

export interface PresetContext {
  /** The hooks block's key, for messages. */
  readonly root: string;
  readonly allowedSessionKeyPrefixes: readonly string[] | null;
  /** Each preset's own block under its name (hooks.<name>), unchecked beyond the schema: the preset checks it. */
  readonly presetSettings: ReadonlyMap<string, unknown>;
  readonly host: GatewayHost;
}
