// hooks.mappings and hooks.presets -> compiled mappings: templates compiled, static policies checked,
// transform modules confined. Every problem names the mapping and its key.
import type { GatewayHost } from '../host.ts';
import { matchesSessionPrefix } from '../settings/session-prefixes.ts';
import type { RunOptions } from '../action.ts';
import { compilePath, compileTemplate, type Template } from './template.ts';
import { confineDir, confineModule } from '../transforms/index.ts';
import { PRESETS } from './presets.ts';
import type { BodyFormat, CompiledMapping } from './mapping.ts';
import { compileHandshake, type HandshakeConfig } from './handshake.ts';
import { compileRespond, type RespondConfig } from './respond.ts';
import { SECRET_HEADERS } from '../auth/secret-headers.ts';
import { compileVerifier, type VerifyConfig } from '../verify/compile-verifier.ts';
import { compileFilter, type FilterConfig } from './filters.ts';
import { compileAddressList } from '../http/address-list.ts';
import { compileRateLimit, type RateLimitConfig } from '../auth/hook-rate-limit.ts';
import { compileBudget, type BudgetConfig } from '../budgets/budget.ts';

/** As written in the config (validated by schema/mapping.schema.json); `to` and `model` may be templates. */
export interface MappingConfig extends RunOptions {
  id?: string;
  match?: { path?: string; source?: string } & FilterConfig;
  /** Source allowlist: IPs and CIDRs; narrows hooks.allowedSources, never widens it. */
  allowedSources?: string[];
  rateLimit?: RateLimitConfig;
  budget?: BudgetConfig;
  coalesce?: { seconds: number; maxItems: number; key?: string };
  action?: 'wake' | 'agent';
  name?: string;
  textTemplate?: string;
  messageTemplate?: string;
  sessionKey?: string;
  agentId?: string;
  maxBodyBytes?: number;
  maxActionBytes?: number;
  allowUnsafeExternalContent?: boolean;
  transform?: { module: string; export?: string };
  body?: BodyFormat;
  maxParts?: number;
  handshake?: HandshakeConfig;
  respond?: RespondConfig;
  verify?: VerifyConfig;
  waitForCompletion?: boolean;
  maxConcurrentRuns?: number;
  dedupe?: { key: string };
  forEach?: string;
  maxItems?: number;
}

export interface MappingPolicies {
  allowedAgentIds: ReadonlySet<string> | null;
  allowedSessionKeyPrefixes: readonly string[] | null;
  transformsRoot: string;
  transformsDir: string;
  /** For secret files given relative to the config. */
  configDir: string;
  /** No verify secret may equal it. */
  gatewayToken: string | undefined;
  /** Each preset's own block under its name (hooks.<name>). */
  presetSettings?: ReadonlyMap<string, unknown>;
}

const RESERVED = new Set(['wake', 'agent']);

/** `/github/` -> `github`; the hook name a mapping answers to. */
/** What a request line carries as it is (RFC 3986 path characters); anything else arrives percent-encoded. */
const REACHABLE_PATH = /^[A-Za-z0-9\-._~!$&'()*+,;=:@/]+$/;

function normalizeHookName(raw: string): string {
  return raw.trim().replace(/^\/+|\/+$/g, '');
}

export async function compileMappings(
  mappings: readonly unknown[],
  presets: readonly string[],
  policies: MappingPolicies,
  host: GatewayHost,
  root: string,
  /** Mappings left out (by index), the others keeping their numbers: the dry run's unusable ones. */
  skip?: ReadonlySet<number>,
): Promise<{ mappings: CompiledMapping[]; problems: string[] }> {
  const problems: string[] = [];
  const out: CompiledMapping[] = [];
  /** Each compiled mapping's config as written: mappings sharing a path must agree on some of it. */
  const written = new Map<CompiledMapping, MappingConfig>();
  const ids = new Set<string>();
  let transformsDir: string | undefined;
  try {
    transformsDir = await confineDir(policies.transformsRoot, policies.transformsDir, `${root}.transformsDir`);
  } catch (err) {
    problems.push((err as Error).message);
  }

  for (const [i, raw] of mappings.entries()) {
    if (skip?.has(i)) continue;
    const m = raw as MappingConfig;
    const where = `${root}.mappings[${i}]${m.id ? ` (id "${m.id}")` : ''}`;
    const id = m.id ?? (m.match?.path ? normalizeHookName(m.match.path) : `mapping-${i}`);
    if (ids.has(id)) problems.push(`${where}.id "${id}" is used twice`);
    ids.add(id);
    const before = problems.length;
    const verifier = m.verify && compileVerifier(m.verify, `${where}.verify`, policies, problems);
    const hiddenHeaders = verifier ? new Set([...SECRET_HEADERS, ...verifier.proofHeaders]) : SECRET_HEADERS;
    const template = (key: keyof MappingConfig, value: string | undefined): Template | undefined => {
      if (value === undefined) return undefined;
      try {
        return compileTemplate(value, hiddenHeaders);
      } catch (err) {
        problems.push(`${where}.${key}: ${(err as Error).message}`);
        return undefined;
      }
    };

    const matchPath = m.match?.path !== undefined ? normalizeHookName(m.match.path) : undefined;
    if (matchPath !== undefined && (matchPath === '' || RESERVED.has(matchPath))) {
      problems.push(`${where}.match.path "${m.match?.path}" is reserved or empty (wake and agent are never shadowed)`);
    } else if (matchPath !== undefined && !REACHABLE_PATH.test(matchPath)) {
      problems.push(
        `${where}.match.path "${m.match?.path}" can never be reached: a request's path is compared as sent, ` +
          "so a name may hold only ASCII letters, digits, / and - . _ ~ ! $ & ' ( ) * + , ; = : @",
      );
    }
    const handshake =
      m.handshake &&
      compileHandshake(m.handshake, `${where}.handshake`, { matchPath, scheme: m.verify?.scheme }, problems);
    const respond = m.respond && compileRespond(m.respond, `${where}.respond`, hiddenHeaders, problems);
    if (m.waitForCompletion && m.respond) {
      problems.push(`${where}: waitForCompletion and respond cannot be used together (respond replaces the answer)`);
    }
    if (m.maxParts !== undefined && m.body !== 'multipart') problems.push(`${where}.maxParts needs body "multipart"`);
    const action = m.action ?? (m.textTemplate !== undefined && m.messageTemplate === undefined ? 'wake' : 'agent');
    if (action === 'wake' && m.textTemplate === undefined && !m.transform) {
      problems.push(`${where}: a wake mapping needs textTemplate or a transform`);
    }
    if (action === 'agent' && m.messageTemplate === undefined && !m.transform) {
      problems.push(`${where}: an agent mapping needs messageTemplate or a transform`);
    }

    const sessionKey = template('sessionKey', m.sessionKey);
    if (sessionKey?.isStatic && !matchesSessionPrefix(sessionKey.source, policies.allowedSessionKeyPrefixes)) {
      problems.push(
        `${where}.sessionKey "${sessionKey.source}" does not start with any of ${root}.allowedSessionKeyPrefixes`,
      );
    }
    const agentId = template('agentId', m.agentId);
    if (agentId?.isStatic) {
      const id2 = agentId.source.trim();
      const resolved = host.agents.list.some((a) => a.id === id2) ? id2 : host.agents.defaultId;
      if (policies.allowedAgentIds !== null && !policies.allowedAgentIds.has(resolved)) {
        problems.push(`${where}.agentId "${id2}" (agent "${resolved}") is not allowed by ${root}.allowedAgentIds`);
      }
    }
    const model = template('model', m.model);
    if (model?.isStatic && host.agents.models && !host.agents.models.includes(model.source)) {
      problems.push(`${where}.model "${model.source}" is not in agents.defaults.models`);
    }
    if (m.deliver !== false && m.channel && m.channel !== 'last' && !host.channels.includes(m.channel)) {
      problems.push(`${where}.channel "${m.channel}" is not configured on this gateway`);
    }
    for (const [i, f] of (m.fallbackChannels ?? []).entries()) {
      const channel = typeof f === 'string' ? f : f.channel;
      if (m.deliver !== false && !host.channels.includes(channel))
        problems.push(`${where}.fallbackChannels[${i}] "${channel}" is not configured on this gateway`);
    }

    let transform: CompiledMapping['transform'];
    if (m.transform && transformsDir !== undefined) {
      try {
        const file = await confineModule(
          policies.transformsRoot,
          transformsDir,
          m.transform.module,
          `${where}.transform.module`,
        );
        transform = { file, exportName: m.transform.export ?? 'default' };
      } catch (err) {
        problems.push((err as Error).message);
      }
    }

    const filter = m.match && compileFilter(m.match, where, m.verify?.scheme, hiddenHeaders, problems);
    const allowedSources =
      m.allowedSources && compileAddressList(m.allowedSources, `${where}.allowedSources`, problems);
    for (const key of ['allowedSources', 'rateLimit'] as const) {
      if (m[key] !== undefined && matchPath === undefined)
        problems.push(`${where}.${key} needs match.path: it is checked before the body, on the hook's name`);
    }
    const rateLimit =
      m.rateLimit && matchPath !== undefined ? compileRateLimit(`hook:${matchPath}`, m.rateLimit) : undefined;

    if (m.budget !== undefined && action !== 'agent')
      problems.push(`${where}.budget is for agent mappings: a wake starts no run`);
    const budget = m.budget && action === 'agent' ? compileBudget(m.budget, `${where}.budget`, problems) : undefined;
    if (m.coalesce !== undefined && (action !== 'agent' || m.forEach !== undefined))
      problems.push(`${where}.coalesce is for agent mappings without forEach`);
    const coalesce =
      m.coalesce && action === 'agent' && m.forEach === undefined
        ? Object.freeze({
            seconds: m.coalesce.seconds,
            maxItems: m.coalesce.maxItems,
            ...(m.coalesce.key !== undefined ? { key: template('coalesce', m.coalesce.key) } : {}),
          })
        : undefined;

    const resolved: CompiledMapping = {
      id,
      where,
      matchPath,
      matchSource: m.match?.source,
      filter,
      allowedSources,
      rateLimit,
      action,
      ...(budget ? { budget } : {}),
      ...(coalesce ? { coalesce } : {}),
      name: m.name?.trim() || id,
      wakeMode: m.wakeMode,
      text: template('textTemplate', m.textTemplate),
      message: template('messageTemplate', m.messageTemplate),
      sessionKey,
      agentId,
      deliver: m.deliver,
      waitForCompletion: m.waitForCompletion,
      maxConcurrentRuns: m.maxConcurrentRuns,
      channel: m.channel,
      to: template('to', m.to),
      fallbackChannels: m.fallbackChannels,
      model,
      thinking: m.thinking,
      timeoutSeconds: m.timeoutSeconds,
      maxBodyBytes: m.maxBodyBytes,
      maxActionBytes: m.maxActionBytes ?? DEFAULT_MAX_ACTION_BYTES,
      allowUnsafeExternalContent: m.allowUnsafeExternalContent === true,
      transform,
      bodyFormat: m.body ?? 'json',
      maxParts: m.maxParts ?? DEFAULT_MAX_PARTS,
      handshake,
      respond,
      verifier,
      hiddenHeaders,
      dedupeKey: template('dedupe', m.dedupe?.key),
      forEach: forEachOf(m, where, problems),
    };
    if (problems.length === before) {
      const frozen = Object.freeze(resolved);
      out.push(frozen);
      written.set(frozen, m);
    }
  }

  checkSharedPaths(out, written, problems);

  // Presets come after the user's mappings, so a user mapping for the same name wins.
  const context = {
    root,
    allowedSessionKeyPrefixes: policies.allowedSessionKeyPrefixes,
    presetSettings: policies.presetSettings ?? new Map<string, unknown>(),
    host,
  };
  for (const name of presets) {
    const preset = PRESETS.get(name);
    if (preset) out.push(preset.compile(context, problems));
    else problems.push(`${root}.presets: no preset is named "${name}"`);
  }
  return { mappings: out, problems };
}

/**
 * The mappings that share a name are one door: the request is verified, read and admitted once, then
 * their filters choose. So they must agree on how the sender proves itself (verify), how the body is
 * read (body), and what is checked before the body (allowedSources, rateLimit).
 */
function checkSharedPaths(
  mappings: readonly CompiledMapping[],
  written: ReadonlyMap<CompiledMapping, MappingConfig>,
  problems: string[],
): void {
  const byPath = new Map<string, CompiledMapping[]>();
  for (const m of mappings) {
    if (m.verifier && m.matchPath === undefined)
      problems.push(`${m.where}.verify needs match.path: a signed hook has a name of its own`);
    if (m.matchPath !== undefined) byPath.set(m.matchPath, [...(byPath.get(m.matchPath) ?? []), m]);
  }
  for (const [name, sharing] of byPath) {
    if (sharing.length < 2) continue;
    const meta = sharing.filter((m) => m.handshake?.kind === 'meta');
    if (meta.length > 1) problems.push(`${meta[1]!.where}.handshake: "${name}" has a meta handshake already`);
    const first = written.get(sharing[0]!)!;
    for (const key of ['verify', 'body', 'allowedSources', 'rateLimit'] as const) {
      const other = sharing.find((m) => !sameSetting(key, written.get(m)![key], first[key]));
      if (other)
        problems.push(`${other.where}.${key} must be the same as ${sharing[0]!.where}.${key}: both answer "${name}"`);
    }
  }
}

/** Two settings as written are the same; an absent body is `json`, the default. */
function sameSetting(key: string, a: unknown, b: unknown): boolean {
  if (key === 'body') return (a ?? 'json') === (b ?? 'json');
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

const DEFAULT_MAX_ITEMS = 100;
const DEFAULT_MAX_PARTS = 100;
/** Four times the default body limit: room for a fan-out, not for one payload copied into every item. */
export const DEFAULT_MAX_ACTION_BYTES = 1_048_576;

function forEachOf(m: MappingConfig, where: string, problems: string[]): CompiledMapping['forEach'] {
  if (m.maxItems !== undefined && m.forEach === undefined) problems.push(`${where}.maxItems needs forEach`);
  if (m.forEach === undefined) return undefined;
  try {
    return {
      path: m.forEach,
      read: compilePath(m.forEach.replace(/^payload\./, '')),
      maxItems: m.maxItems ?? DEFAULT_MAX_ITEMS,
    };
  } catch (err) {
    problems.push(`${where}.forEach: ${(err as Error).message}`);
    return undefined;
  }
}
