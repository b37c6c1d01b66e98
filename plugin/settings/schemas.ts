// Every JSON Schema in schema/, compiled once at module load, and one formatter that turns ajv's
// errors into sentences naming the key (`hooks.allowedAgentIds[2] must be a string`). A config gets
// every problem at once; a request body (or a transform's result) only its first: a body built to
// have tens of thousands of problems must not cost more to refuse than to read.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import channelSchema from '../../schema/channel.schema.json' with { type: 'json' };
import hooksConfigSchema from '../../schema/hooks-config.schema.json' with { type: 'json' };
import mappingSchema from '../../schema/mapping.schema.json' with { type: 'json' };
import wakePayloadSchema from '../../schema/wake-payload.schema.json' with { type: 'json' };
import agentPayloadSchema from '../../schema/agent-payload.schema.json' with { type: 'json' };
import transformResultSchema from '../../schema/transform-result.schema.json' with { type: 'json' };

const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
ajv.addSchema(channelSchema);
ajv.addSchema(mappingSchema);
const firstErrorOnly = new Ajv({ allErrors: false, strict: true, allowUnionTypes: true });
firstErrorOnly.addSchema(channelSchema);

export const validateHooksConfig = ajv.compile(hooksConfigSchema);
export const validateWakePayload = firstErrorOnly.compile(wakePayloadSchema);
export const validateAgentPayload = firstErrorOnly.compile(agentPayloadSchema);
export const validateTransformResult = firstErrorOnly.compile(transformResultSchema);

/** Compiles a request body's schema (a preset's payload) to stop at its first error, as the bodies above. */
export function compileFirstError<T = unknown>(schema: object): ValidateFunction<T> {
  return firstErrorOnly.compile<T>(schema);
}

/** Compiles another schema with the shared instance (the standalone gateway's own config). */
export function compileSchema<T = unknown>(schema: object): ValidateFunction<T> {
  return ajv.compile<T>(schema);
}

/** `/allowedAgentIds/2` under `hooks` -> `hooks.allowedAgentIds[2]`; the root itself is `root`. */
function keyPath(root: string, instancePath: string): string {
  let out = root;
  for (const raw of instancePath.split('/').slice(1)) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (/^\d+$/.test(part)) out += `[${part}]`;
    else if (/^[A-Za-z_$][\w$-]*$/.test(part)) out += out ? `.${part}` : part;
    else out += `[${JSON.stringify(part)}]`;
  }
  return out;
}

function describe(err: ErrorObject, root: string): string {
  const at = keyPath(root, err.instancePath);
  const subject = at || 'body';
  const p = err.params as Record<string, unknown>;
  switch (err.keyword) {
    case 'required':
      return `${keyPath(root, `${err.instancePath}/${String(p.missingProperty)}`)} is required`;
    case 'additionalProperties':
      return `${keyPath(root, `${err.instancePath}/${String(p.additionalProperty)}`)} is not a known field`;
    case 'type':
      return `${subject} must be ${article(String(p.type))}`;
    case 'enum':
      return `${subject} must be one of: ${(p.allowedValues as unknown[]).map(String).join(', ')}`;
    case 'pattern':
      return p.pattern === '\\S' ? `${subject} must not be blank` : `${subject} must match ${String(p.pattern)}`;
    case 'exclusiveMinimum':
      return `${subject} must be greater than ${String(p.limit)}`;
    case 'maximum':
      return `${subject} must be at most ${String(p.limit)}`;
    case 'minimum':
      return `${subject} must be at least ${String(p.limit)}`;
    case 'minLength':
      return p.limit === 1
        ? `${subject} must not be empty`
        : `${subject} must have at least ${String(p.limit)} characters`;
    case 'maxLength':
      return `${subject} must have at most ${String(p.limit)} characters`;
    default:
      return `${subject} ${err.message ?? 'is invalid'}`;
  }
}

function article(type: string): string {
  if (type === 'array' || type === 'integer' || type === 'object') return `an ${type}`;
  return `a ${type}`;
}

/** At most this many problems are listed; a body can be built to have tens of thousands. */
const MAX_PROBLEMS = 20;

/**
 * A value that may take several forms (anyOf) fails every branch: one sentence naming the types the
 * branches accept replaces the branches' own errors at that key.
 */
function collapseAnyOf(
  errors: readonly ErrorObject[],
  root: string,
): { skip: Set<ErrorObject>; sentences: Map<ErrorObject, string> } {
  const skip = new Set<ErrorObject>();
  const sentences = new Map<ErrorObject, string>();
  for (const any of errors) {
    if (any.keyword !== 'anyOf') continue;
    const branch = `${any.schemaPath}/`;
    const types: string[] = [];
    for (const e of errors) {
      if (!e.schemaPath.startsWith(branch)) continue;
      skip.add(e);
      if (e.keyword === 'type' && e.instancePath === any.instancePath) types.push(article(String(e.params.type)));
    }
    const subject = keyPath(root, any.instancePath) || 'body';
    sentences.set(
      any,
      types.length ? `${subject} must be ${types.join(' or ')}` : `${subject} has none of its allowed forms`,
    );
  }
  return { skip, sentences };
}

/** The distinct problems, in the order ajv found them (linear: a hostile body cannot make it slow). */
export function formatErrors(errors: readonly ErrorObject[] | null | undefined, root = ''): string[] {
  const seen = new Set<string>();
  const all = errors ?? [];
  const { skip, sentences } = collapseAnyOf(all, root);
  for (const e of all) if (!skip.has(e)) seen.add(sentences.get(e) ?? describe(e, root));
  const out = [...seen];
  if (out.length <= MAX_PROBLEMS) return out;
  return [...out.slice(0, MAX_PROBLEMS), `…and ${out.length - MAX_PROBLEMS} more problems`];
}
