// Where the watcher posts: <base URL><hooks.path>/gmail, with the first hook token in force, under the
// body limit of whatever owns the gmail hook (a user mapping for "gmail" wins over the preset).
import { ConfigError } from '../plugin/host-kit.ts';
import { DEFAULTS, PRESETS, readSecretFile, resolveSecret } from '../plugin/kits/config.ts';
import type { HookTarget } from './hook-poster.ts';

interface HooksBlock {
  token?: string | string[];
  tokenFile?: string;
  maxBodyBytes?: number;
  mappings?: { match?: { path?: string }; maxBodyBytes?: number }[];
}

export function gmailHookTarget(
  hooks: unknown,
  options: { baseUrl: string; hooksPath: string; configDir: string; root?: string; file?: string },
): HookTarget {
  const h = (hooks ?? {}) as HooksBlock;
  const root = options.root ?? 'hooks';
  const problems: string[] = [];
  const first = Array.isArray(h.token) ? h.token[0] : h.token;
  let token = first === undefined ? undefined : resolveSecret(first, `${root}.token`, problems);
  if (token === undefined && h.tokenFile !== undefined) {
    token = readSecretFile(h.tokenFile, options.configDir, `${root}.tokenFile`, problems);
  }
  if (token === undefined && problems.length === 0) {
    problems.push(`${root}.token (or ${root}.tokenFile) is required: the Gmail watcher posts with the hook token`);
  }
  if (problems.length || token === undefined) throw new ConfigError(problems, options.file);
  const own = h.mappings?.find((m) => m?.match?.path === 'gmail');
  const bodyLimit = own
    ? (own.maxBodyBytes ?? h.maxBodyBytes ?? DEFAULTS.maxBodyBytes)
    : (PRESETS.get('gmail')?.mapping.maxBodyBytes ?? DEFAULTS.maxBodyBytes);
  return { url: `${options.baseUrl.replace(/\/+$/, '')}${options.hooksPath}/gmail`, token, bodyLimit };
}
