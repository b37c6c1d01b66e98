// Mapped hooks at request time: which mappings may own a name, which one owns this payload, and the
// wake or agent action it builds (through templates, the gmail preset, or a transform module).
import type { IncomingHttpHeaders } from 'node:http';
import { HookError } from '../errors.ts';
import { formatErrors, validateTransformResult } from '../config/schemas.ts';
import type { AgentSpec, RunOptions } from '../actions/agent.ts';
import type { WakeSpec } from '../actions/wake.ts';
import { wrapExternalContent } from '../safety/external-content.ts';
import path from 'node:path';
import type { Logger } from '../host.ts';
import type { TransformRunner } from './transform-runner.ts';
import type { Template, TemplateContext } from './template.ts';
import type { ResolvedMapping } from './resolve.ts';
import { gmailAgentSpecs } from './gmail.ts';

export type MappedAction =
  | { kind: 'skip' }
  | { kind: 'wake'; spec: WakeSpec }
  | { kind: 'agent'; specs: AgentSpec[] };

interface MappingIndex {
  /** For each match.path: the mappings that could own it, in config order. */
  byName: Map<string, readonly ResolvedMapping[]>;
  /** For any other name: the mappings without match.path. */
  anyName: readonly ResolvedMapping[];
}

/** Built once per config (the snapshot's mappings array is frozen and replaced on reload). */
const indexes = new WeakMap<readonly ResolvedMapping[], MappingIndex>();

function indexOf(mappings: readonly ResolvedMapping[]): MappingIndex {
  let index = indexes.get(mappings);
  if (!index) {
    const byName = new Map<string, readonly ResolvedMapping[]>();
    for (const m of mappings) {
      const name = m.matchPath;
      if (name !== undefined && !byName.has(name)) {
        byName.set(name, mappings.filter((x) => x.matchPath === undefined || x.matchPath === name));
      }
    }
    index = { byName, anyName: mappings.filter((m) => m.matchPath === undefined) };
    indexes.set(mappings, index);
  }
  return index;
}

/** Mappings that could own this name, in config order; the payload decides among them. */
export function candidatesFor(name: string, mappings: readonly ResolvedMapping[]): readonly ResolvedMapping[] {
  const index = indexOf(mappings);
  return index.byName.get(name) ?? index.anyName;
}

/** The first mapping in order whose source matches the payload's `source`. */
export function pickMapping(candidates: readonly ResolvedMapping[], payload: Record<string, unknown>): ResolvedMapping | undefined {
  const source = typeof payload.source === 'string' ? payload.source : undefined;
  return candidates.find((m) => m.matchSource === undefined || m.matchSource === source);
}

/** A mapping's action as rendered, and what a transform may return over it. */
interface ActionFields extends RunOptions {
  action?: 'wake' | 'agent';
  text?: string;
  message?: string;
  name?: string;
  sessionKey?: string;
  agentId?: string;
}

/** Rendered text, or undefined when the template is absent or renders blank. */
function render(t: Template | undefined, ctx: TemplateContext): string | undefined {
  if (!t) return undefined;
  const v = t.render(ctx);
  return v.trim() === '' ? undefined : v;
}

const HIDDEN_HEADERS = new Set(['authorization', 'proxy-authorization', 'x-service-token', 'cookie']);

/** What a transform sees of the headers: strings only, credentials removed. */
function transformHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined || HIDDEN_HEADERS.has(k)) continue;
    out[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

/** What a mapping's templates and a transform are given of the request. */
export interface MappedRequest {
  headers: IncomingHttpHeaders;
  query: URLSearchParams;
  name: string;
}

/**
 * The action a mapping builds from this payload. A promise only for mappings with a transform: an
 * await of the rest would cost every templated request a promise and a turn of the microtask queue.
 */
export function buildMappedAction(
  m: ResolvedMapping,
  payload: Record<string, unknown>,
  request: MappedRequest,
  transforms: TransformRunner,
  logger: Logger,
): MappedAction | Promise<MappedAction> {
  if (m.preset === 'gmail') return { kind: 'agent', specs: gmailAgentSpecs(payload) };

  const ctx: TemplateContext = { payload, headers: request.headers, query: request.query, path: request.name };
  const fields: ActionFields = {
    action: m.action,
    text: render(m.text, ctx),
    message: render(m.message, ctx),
    name: m.name,
    wakeMode: m.wakeMode,
    sessionKey: render(m.sessionKey, ctx),
    agentId: render(m.agentId, ctx),
    deliver: m.deliver,
    channel: m.channel,
    to: render(m.to, ctx),
    model: render(m.model, ctx),
    thinking: m.thinking,
    timeoutSeconds: m.timeoutSeconds,
  };
  if (!m.transform) return actionOf(m, fields);
  return transformed(m, m.transform, fields, payload, request, transforms, logger);
}

/** The rendered fields with what the transform returned over them; null from the transform skips. */
async function transformed(
  m: ResolvedMapping,
  transform: NonNullable<ResolvedMapping['transform']>,
  rendered: ActionFields,
  payload: Record<string, unknown>,
  request: MappedRequest,
  transforms: TransformRunner,
  logger: Logger,
): Promise<MappedAction> {
  const outcome = await transforms.run({
    file: transform.file,
    exportName: transform.exportName,
    ctx: { payload, headers: transformHeaders(request.headers), query: Object.fromEntries(request.query), path: request.name },
  });
  if (!outcome.ok) {
    logger.warn('transform failed', { mapping: m.id, module: path.basename(transform.file), reason: outcome.reason });
    throw new HookError(500, 'mapping_failed', `mapping "${m.id}": ${outcome.reason}`);
  }
  if (outcome.value === null) return { kind: 'skip' };
  if (!validateTransformResult(outcome.value)) {
    throw new HookError(
      500,
      'mapping_failed',
      `mapping "${m.id}": the transform returned an invalid action: ${formatErrors(validateTransformResult.errors).join('; ')}`,
    );
  }
  return actionOf(m, { ...rendered, ...(outcome.value as ActionFields) });
}

/** The wake or agent action the fields describe; a 400 when its text or message came out empty. */
function actionOf(m: ResolvedMapping, fields: ActionFields): MappedAction {
  const name = fields.name?.trim() || m.id;

  if ((fields.action ?? m.action) === 'wake') {
    if (fields.text === undefined || fields.text.trim() === '') {
      throw new HookError(400, 'invalid_payload', `mapping "${m.id}" produced an empty text from this payload`);
    }
    const text = fields.text.trim();
    const safe = m.allowUnsafeExternalContent ? text : wrapExternalContent(text, { source: 'webhook', hookName: name });
    return { kind: 'wake', spec: { text: safe, mode: fields.wakeMode ?? 'now', hook: name } };
  }
  if (fields.message === undefined || fields.message.trim() === '') {
    throw new HookError(400, 'invalid_payload', `mapping "${m.id}" produced an empty message from this payload`);
  }
  return {
    kind: 'agent',
    specs: [
      {
        message: fields.message,
        name,
        agentId: fields.agentId,
        mappingSessionKey: fields.sessionKey,
        wakeMode: fields.wakeMode,
        deliver: fields.deliver,
        channel: fields.channel,
        to: fields.to,
        model: fields.model,
        thinking: fields.thinking,
        timeoutSeconds: fields.timeoutSeconds,
        allowUnsafeExternalContent: m.allowUnsafeExternalContent,
        source: 'webhook',
      },
    ],
  };
}
