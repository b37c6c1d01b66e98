// The running gateway's admin API as the CLI commands call it: the address from the config (or
// --url), the gateway token, JSON in and out; an answer other than the one expected is an error
// that names the gateway's status and code.
import { localUrl } from '../../server/settings.ts';
import type { GatewaySettings } from '../../server/settings.ts';

/** The options of every command that talks to the running gateway (parseArgs). */
export const GATEWAY_OPTIONS = {
  url: { type: 'string' },
  config: { type: 'string' },
  'state-dir': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The help lines of GATEWAY_OPTIONS, ending every such command's help. */
export const GATEWAY_OPTIONS_HELP = `  --url URL      The gateway's address. Default: from gateway.bind and gateway.port.
  --config FILE  Config file. Default: $HOOKGATE_CONFIG, else <state-dir>/gateway.json5.
  --state-dir D  Default: $HOOKGATE_STATE_DIR, else ~/.hookgate.`;

export interface AdminClient {
  base: string;
  /** The JSON body of an answer with the expected status (200 unless said). */
  call(method: 'GET' | 'POST', path: string, body?: unknown, expected?: number): Promise<unknown>;
}

export function adminClient(settings: GatewaySettings, url?: string): AdminClient {
  const base = (url ?? localUrl(settings.bind, settings.port)).replace(/\/+$/, '');
  return {
    base,
    async call(method, path, body, expected = 200) {
      let res: Response;
      try {
        res = await fetch(`${base}${path}`, {
          method,
          headers: { authorization: `Bearer ${settings.gatewayToken}` },
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        });
      } catch {
        throw new Error(`cannot reach the gateway at ${base} (is it running? --url sets the address)`);
      }
      const answer = (await res.json().catch(() => undefined)) as { code?: string; error?: string } | undefined;
      if (res.status !== expected) {
        const why = answer?.error ? `: ${answer.error}` : '';
        throw new Error(`the gateway at ${base} answered ${res.status}${answer?.code ? ` ${answer.code}` : ''}${why}`);
      }
      return answer;
    },
  };
}
