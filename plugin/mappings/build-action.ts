// The action a mapping builds from a payload: through its templates, a preset's producer, or a
// transform module (whose result may change the rendered fields or skip the request).
import type { IncomingHttpHeaders } from 'node:http';
import path from 'node:path';
import { refuse } from '../errors.ts';
import { formatErrors, validateTransformResult } from '../settings/schemas.ts';
import { SKIP, type Action, type RunOptions } from '../action.ts';
import { wrapExternalContent } from '../safety/index.ts';
import type { Logger } from '../host.ts';
import type { TransformCall, TransformOutcome } from '../transforms/index.ts';
import type { Template, TemplateContext } from './template.ts';
import type { CompiledMapping } from './mapping.ts';
import { actionTextBytes, checkActionBytes } from './action-bytes.ts';

/** What building an action needs of the transform runner: calling a transform. */
export interface Transforms {
  run(call: TransformCall): Promise<TransformOutcome>;
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

/** What a transform sees of the headers: strings only, credentials removed. */
function transformHeaders(headers: IncomingHttpHeaders, hidden: ReadonlySet<string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined || hidden.has(k)) continue;
    out[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

/** What a mapping's templates and a transform are given of the request. */
export interface MappedRequest {
  headers: IncomingHttpHeaders;
  query: URLSearchParams;
  name: string;
  /** The request's path and query on http://localhost, as OpenClaw's built-in hooks give transforms `url`. */
  url: string;
  /** The mapping's body limit: what a transform returns may be no larger. */
  bodyLimit: number;
}

/** A mapping's dedupe.key as rendered for this request, or for one forEach item (blank: no key). */
export function renderDedupeKey(
  key: Template,
  payload: Record<string, unknown>,
  request: MappedRequest,
  item?: ForEachItem,
): string {
  return key.render(contextOf(payload, request, item));
}

/** One element of a forEach array, and where it stood. */
export interface ForEachItem {
  item: unknown;
  index: number;
}

function contextOf(payload: Record<string, unknown>, request: MappedRequest, item?: ForEachItem): TemplateContext {
  const ctx: TemplateContext = { payload, headers: request.headers, query: request.query, path: request.name };
  if (item) {
    ctx.item = item.item;
    ctx.index = item.index;
  }
  return ctx;
}

/** The forEach items of this payload: a 400 when the path is not an array or holds too many. */
export function forEachItems(m: CompiledMapping, payload: Record<string, unknown>): ForEachItem[] | undefined {
  if (!m.forEach) return undefined;
  // A preset checks every item before the first one acts.
  m.producer?.checkItems(payload);
  const items = m.forEach.read(payload);
  if (!Array.isArray(items))
    throw refuse.invalidPayload(`mapping "${m.id}": forEach "${m.forEach.path}" is not an array in this payload`);
  if (items.length > m.forEach.maxItems) throw refuse.tooManyItems(m.forEach.maxItems);
  return items.map((item: unknown, index) => ({ item, index }));
}

/** The action a mapping builds from this payload: one per forEach item (merged), or one. */
export async function buildMappedAction(
  m: CompiledMapping,
  payload: Record<string, unknown>,
  request: MappedRequest,
  transforms: Transforms,
  logger: Logger,
): Promise<Action> {
  if (m.producer) return bounded(m, m.producer.build(payload, m));
  const items = forEachItems(m, payload);
  if (!items) return bounded(m, await buildItemAction(m, payload, request, transforms, logger));
  const merged: Action = { wakes: [], runs: [], fanOut: true };
  let bytes = 0;
  // One after another: a transform runs once per item, and the items keep their order.
  for (const item of items) {
    const action = await buildItemAction(m, payload, request, transforms, logger, item);
    bytes += actionTextBytes(action);
    checkActionBytes(m, bytes);
    merged.wakes.push(...action.wakes);
    merged.runs.push(...action.runs);
  }
  return merged;
}

function bounded(m: CompiledMapping, action: Action): Action {
  checkActionBytes(m, actionTextBytes(action));
  return action;
}

/** The action of one item (or of the whole payload without forEach). */
export async function buildItemAction(
  m: CompiledMapping,
  payload: Record<string, unknown>,
  request: MappedRequest,
  transforms: Transforms,
  logger: Logger,
  item?: ForEachItem,
): Promise<Action> {
  if (m.producer) return m.producer.build(payload, m, item);
  const ctx = contextOf(payload, request, item);
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
  return transformed(m, m.transform, fields, payload, request, transforms, logger, item);
}

/** The rendered fields with what the transform returned over them; null from the transform skips. */
async function transformed(
  m: CompiledMapping,
  transform: NonNullable<CompiledMapping['transform']>,
  rendered: ActionFields,
  payload: Record<string, unknown>,
  request: MappedRequest,
  transforms: Transforms,
  logger: Logger,
  item?: ForEachItem,
): Promise<Action> {
  const ctx: TransformCall['ctx'] = {
    payload,
    headers: transformHeaders(request.headers, m.hiddenHeaders),
    query: Object.fromEntries(request.query),
    path: request.name,
    url: request.url,
  };
  if (item) {
    ctx.item = item.item;
    ctx.index = item.index;
  }
  // What a transform returns is held to the mapping's body limit, as what it was given is.
  const outcome = await transforms.run({
    file: transform.file,
    exportName: transform.exportName,
    ctx,
    maxOutputBytes: request.bodyLimit,
  });
  if (!outcome.ok) {
    logger.warn('transform failed', { mapping: m.id, module: path.basename(transform.file), reason: outcome.reason });
    throw refuse.mappingFailed(`mapping "${m.id}": ${outcome.reason}`);
  }
  if (outcome.value === null) return SKIP;
  if (!validateTransformResult(outcome.value)) {
    throw refuse.mappingFailed(
      `mapping "${m.id}": the transform returned an invalid action: ${formatErrors(validateTransformResult.errors).join('; ')}`,
    );
  }
  return actionOf(m, { ...rendered, ...withoutOpenClawNames(outcome.value as TransformFields) });
}

/** A transform's result, which may use the names of OpenClaw's built-in hooks: `kind`, and `mode` for a wake. */
type TransformFields = ActionFields & { kind?: 'wake' | 'agent'; mode?: ActionFields['wakeMode'] };

/** Transforms written for OpenClaw's built-in hooks run unchanged: their names read as hookgate's. */
function withoutOpenClawNames(value: TransformFields): ActionFields {
  if (value.kind === undefined && value.mode === undefined) return value;
  const { kind, mode, ...fields } = value;
  const action = fields.action ?? kind;
  return { ...fields, action, wakeMode: fields.wakeMode ?? (action === 'agent' ? undefined : mode) };
}

/** The wake or agent action the fields describe; a 400 when its text or message came out empty. */
function actionOf(m: CompiledMapping, fields: ActionFields): Action {
  const name = fields.name?.trim() || m.id;

  if ((fields.action ?? m.action) === 'wake') {
    if (fields.text === undefined || fields.text.trim() === '') {
      throw refuse.invalidPayload(`mapping "${m.id}" produced an empty text from this payload`);
    }
    const text = fields.text.trim();
    const safe = m.allowUnsafeExternalContent ? text : wrapExternalContent(text, { source: 'webhook', hookName: name });
    return { wakes: [{ text: safe, mode: fields.wakeMode ?? 'now', hook: name }], runs: [] };
  }
  if (fields.message === undefined || fields.message.trim() === '') {
    throw refuse.invalidPayload(`mapping "${m.id}" produced an empty message from this payload`);
  }
  return {
    wakes: [],
    runs: [
      {
        message: fields.message,
        name,
        agentId: fields.agentId,
        mappingSessionKey: fields.sessionKey,
        wakeMode: fields.wakeMode,
        deliver: fields.deliver,
        channel: fields.channel,
        to: fields.to,
        ...(m.fallbackChannels ? { fallbackChannels: [...m.fallbackChannels] } : {}),
        model: fields.model,
        thinking: fields.thinking,
        timeoutSeconds: fields.timeoutSeconds,
        allowUnsafeExternalContent: m.allowUnsafeExternalContent,
        source: 'webhook',
      },
    ],
  };
}
