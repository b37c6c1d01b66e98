// `GET hooks/<name>`: one hook's settings as configured, for the console's hooks view: wake and agent
// with the hook token's source and their endpoint settings, a mapping with its block from the config;
// every secret (a token, a signing secret, a verify token) replaced by where it comes from: "set"
// (written in the file), "from ${NAME}" (the environment) or "from file" (a secretFile, tokenFile),
// never its value. Paused and held as GET hooks says.
import { refuse } from '../errors.ts';
import type { HookPauses } from '../pauses/hook-pauses.ts';
import type { HooksSnapshot } from '../request/snapshot.ts';
import type { AdminCall, AdminRoute } from './admin-call.ts';

/** Keys whose values are secrets, and keys naming a file that holds one. */
const SECRET_KEYS = new Set(['token', 'secret', 'secrets', 'verifyToken', 'password']);
const SECRET_FILE_KEYS = new Set(['tokenFile', 'secretFile']);
const FROM_ENV = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

/** Where one secret value comes from. */
function sourceOf(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sourceOf);
  if (typeof value !== 'string') return 'set';
  const env = FROM_ENV.exec(value.trim());
  return env ? `from \${${env[1]}}` : 'set';
}

/** The config block with every secret replaced by its source. */
export function withSecretsShownAsSources(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withSecretsShownAsSources);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    if (SECRET_KEYS.has(key)) out[key] = sourceOf(v);
    else if (SECRET_FILE_KEYS.has(key)) out[key] = 'from file';
    else out[key] = withSecretsShownAsSources(v);
  }
  return out;
}

export interface HookSettingsParts {
  snapshot(): HooksSnapshot;
  pauses: HookPauses;
  /** The hooks block as the config file has it (before any value is resolved). */
  hooksBlock(): Record<string, unknown>;
}

export function hookSettingsRoute(parts: HookSettingsParts): AdminRoute {
  return (call: AdminCall) => {
    if (call.parts.length !== 2 || call.parts[0] !== 'hooks') return undefined;
    if (call.method !== 'GET')
      return Promise.reject(refuse.methodNotAllowed('GET', "a hook's settings are read with GET"));
    return Promise.resolve().then(() => {
      const name = call.parts[1]!;
      const snap = parts.snapshot();
      const block = parts.hooksBlock();
      const { paused, held } = parts.pauses.stateOf(name);
      if (name === 'wake' || name === 'agent') {
        const settings: Record<string, unknown> = {
          path: `${snap.path}/${name}`,
          auth: 'hook token',
          token: block.tokenFile !== undefined && block.token === undefined ? 'from file' : sourceOf(block.token),
          ...((block.endpoints as Record<string, unknown> | undefined)?.[name] as object | undefined),
        };
        return { hook: { name, action: name, paused, held, settings: withSecretsShownAsSources(settings) } };
      }
      const index = snap.mappings.findIndex((m) => m.id === name);
      if (index < 0) {
        const quoted = JSON.stringify(name.length > 100 ? `${name.slice(0, 100)}…` : name);
        throw refuse.notFound(`no hook named ${quoted}: use wake, agent or a mapping id (GET /api/hooks)`);
      }
      const mapping = snap.mappings[index]!;
      // A mapping from the file says where it is ("hooks.mappings[2] …"); a preset's has no block there.
      const at = /\.mappings\[(\d+)\]/.exec(mapping.where);
      const configured = at ? snap.mappingConfigs[Number(at[1])] : { preset: mapping.where };
      return {
        hook: {
          name,
          action: mapping.action,
          paused,
          held,
          settings: withSecretsShownAsSources(configured),
        },
      };
    });
  };
}
