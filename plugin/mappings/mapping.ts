// A mapping as the request path uses it: templates compiled, policies checked, transform confined.
import type { ChannelName } from '../host.ts';
import type { WakeMode } from '../actions/action.ts';
import type { Template } from './template.ts';
import type { Verifier } from '../verify/verifier.ts';
import type { Handshake } from './handshake.ts';
import type { Respond } from './respond.ts';

export type BodyFormat = 'json' | 'form' | 'multipart';

export interface CompiledMapping {
  readonly id: string;
  /** Where it came from, for messages: hooks.mappings[2] (id "github") */
  readonly where: string;
  readonly matchPath?: string;
  readonly matchSource?: string;
  readonly action: 'wake' | 'agent';
  readonly name: string;
  readonly wakeMode?: WakeMode;
  readonly text?: Template;
  readonly message?: Template;
  readonly sessionKey?: Template;
  readonly agentId?: Template;
  readonly deliver?: boolean;
  readonly channel?: 'last' | ChannelName;
  readonly to?: Template;
  readonly model?: Template;
  readonly thinking?: string;
  readonly timeoutSeconds?: number;
  readonly maxBodyBytes?: number;
  /** The most bytes of text (wake texts, run messages) one request's actions may carry. */
  readonly maxActionBytes: number;
  readonly allowUnsafeExternalContent: boolean;
  readonly transform?: { readonly file: string; readonly exportName: string };
  readonly preset?: 'gmail';
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
  /** dedupe.key: the delivery's idempotency key, rendered from the request. */
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
