// `hookgate webhooks gmail setup`: the Google side (OAuth, Pub/Sub, watch) through the core's setup,
// then hooks.gmail written into the config. The browser, the terminal and the config file are this
// command's; every line it prints goes to stderr except the closing summary, and none holds a secret.
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import JSON5 from 'json5';
import {
  assertAccountName,
  googleEndpoints,
  parsePastedCallback,
  readClientSecretFile,
  readGmailCredentials,
  runGmailSetup,
  SETUP_STEPS,
  SetupStepError,
  TESTING_MODE,
  writeGmailCredentials,
  type Callback,
  type GmailCredentials,
} from '../../../../../gmail/index.ts';
import { ConfigError } from '../../../../host-kit.ts';
import { resolveHooksConfig, selectStandaloneConfig } from '../../../../kits/config.ts';
import { writeFileAtomic } from '../../../../util/write-file-atomic.ts';
import { defaultConfigText, resolveGatewaySettings } from '../../server/settings.ts';
import { applyGmailSetup, type GmailSetupKeys } from '../support/gmail-config-edit.ts';
import { resolvePaths } from '../support/state-paths.ts';
import { UsageError } from '../support/cli-common.ts';
import { asRun, commandName } from '../support/command-name.ts';
import { errorMessage } from '../../../../util/errors.ts';

export const GMAIL_SETUP_HELP = `  setup   Connect a Gmail account: authorize hookgate, create the Pub/Sub topic and subscription,
          start the Gmail watch, and write hooks.gmail into the config.

Usage: hookgate webhooks gmail setup --account EMAIL --project ID --client-secret FILE [options]

  --account EMAIL            The Gmail address to watch (you sign in as it on Google's page)
  --project ID               Google Cloud project ID (as in the console's project picker)
  --client-secret FILE       The JSON of a "Desktop app" OAuth client, as downloaded from the console
  --mode pull|push           pull (default): hookgate asks Pub/Sub, no public URL needed.
                             push: Pub/Sub posts to --push-endpoint with a signed OIDC token.
  --push-endpoint URL        push mode: the public https URL that reaches hooks.gmail.serve
  --push-service-account SA  push mode: the service account email Pub/Sub signs the token as
  --topic NAME               Pub/Sub topic (default gmail-watch)
  --subscription NAME        Pub/Sub subscription (default gmail-watch-sub)
  --label LABEL              Gmail label id to watch (default INBOX)
  --no-browser               Print the consent URL instead of opening a browser, and read the
                             code (or the whole address Google sent you to) from stdin
  --reauth                   Ask for consent again even if the stored refresh token still works
  --config FILE              Config file (default $HOOKGATE_CONFIG, else <state-dir>/gateway.json5)
  --state-dir DIR            State directory (default $HOOKGATE_STATE_DIR, else ~/.hookgate);
                             the refresh token goes to <state-dir>/secrets/gmail-<account>.json (0600)

Run it again at any time: what is already right is left alone (no new topic, subscription or IAM
change, config unchanged); the watch is renewed. The config is written last, only if every step
succeeded.`;

const STEP_CONFIG = SETUP_STEPS;
/** Waiting for the consent longer than this is a forgotten tab. */
const CONSENT_TIMEOUT_MS = 10 * 60_000;
/** Pub/Sub's rule for topic and subscription ids. */
const PUBSUB_ID = /^(?!goog)[A-Za-z][A-Za-z0-9._~+%-]{2,254}$/;
/** Project ids: 6-30 lowercase letters, digits and hyphens, starting with a letter. */
const PROJECT_ID = /^[a-z][a-z0-9-]{4,28}[a-z0-9]$/;

export async function gmailSetupCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      account: { type: 'string' },
      project: { type: 'string' },
      'client-secret': { type: 'string' },
      mode: { type: 'string', default: 'pull' },
      'push-endpoint': { type: 'string' },
      'push-service-account': { type: 'string' },
      topic: { type: 'string', default: 'gmail-watch' },
      subscription: { type: 'string', default: 'gmail-watch-sub' },
      label: { type: 'string', default: 'INBOX' },
      'no-browser': { type: 'boolean', default: false },
      reauth: { type: 'boolean', default: false },
      config: { type: 'string' },
      'state-dir': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    console.log(asRun(GMAIL_SETUP_HELP));
    return 0;
  }
  try {
    return await setup(values);
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`hookgate: ${err.message}\nRun \`${commandName()} webhooks gmail --help\` for usage.`);
      return 2;
    }
    if (err instanceof SetupStepError || err instanceof ConfigError) console.error(err.message);
    else console.error(`hookgate: ${errorMessage(err)}`);
    console.error('Setup stopped; the config file was not changed.');
    return 1;
  }
}

interface SetupValues {
  account?: string;
  project?: string;
  'client-secret'?: string;
  mode: string;
  'push-endpoint'?: string;
  'push-service-account'?: string;
  topic: string;
  subscription: string;
  label: string;
  'no-browser': boolean;
  reauth: boolean;
  config?: string;
  'state-dir'?: string;
}

function checkedKeys(v: SetupValues): GmailSetupKeys {
  const missing = (['account', 'project', 'client-secret'] as const).filter((k) => !v[k]);
  if (missing.length) throw new UsageError(`setup needs ${missing.map((k) => `--${k}`).join(', ')}`);
  try {
    assertAccountName(v.account!);
  } catch {
    throw new UsageError('--account must be an email address');
  }
  if (!PROJECT_ID.test(v.project!))
    throw new UsageError('--project must be a Google Cloud project ID (6-30 lowercase letters, digits, hyphens)');
  for (const key of ['topic', 'subscription'] as const)
    if (!PUBSUB_ID.test(v[key]))
      throw new UsageError(`--${key} must start with a letter and be 3-255 letters, digits or - _ . ~ + %`);
  if (!/^[A-Za-z0-9_-]{1,100}$/.test(v.label))
    throw new UsageError('--label must be a Gmail label id (INBOX, UNREAD, Label_123, …)');
  if (v.mode !== 'pull' && v.mode !== 'push') throw new UsageError('--mode must be pull or push');
  const keys: GmailSetupKeys = {
    account: v.account!,
    project: v.project!,
    topic: v.topic,
    subscription: v.subscription,
    mode: v.mode,
    label: v.label,
  };
  if (v.mode === 'push') {
    let endpoint: URL | undefined;
    try {
      endpoint = new URL(v['push-endpoint'] ?? '');
    } catch {
      endpoint = undefined;
    }
    // Pub/Sub pushes only to https; credentials in the URL would end up in the config and logs.
    if (!endpoint || endpoint.protocol !== 'https:' || endpoint.username || endpoint.password)
      throw new UsageError('--mode push needs --push-endpoint https://… (a public https URL, no credentials)');
    if (!/^[^@\s]+@[^@\s]+\.iam\.gserviceaccount\.com$/.test(v['push-service-account'] ?? ''))
      throw new UsageError('--mode push needs --push-service-account NAME@PROJECT.iam.gserviceaccount.com');
    keys.pushEndpoint = endpoint.toString();
    keys.pushServiceAccount = v['push-service-account'];
  } else if (v['push-endpoint'] || v['push-service-account']) {
    throw new UsageError('--push-endpoint and --push-service-account are for --mode push');
  }
  return keys;
}

async function setup(v: SetupValues): Promise<number> {
  const keys = checkedKeys(v);
  const { configPath, stateDir } = resolvePaths(v);
  const endpoints = googleEndpoints();
  const client = await readClientSecretFile(path.resolve(v['client-secret']!));
  // The config is checked before Google is touched: a file setup could not edit stops it here.
  await editedConfig(configPath, keys);
  let stored: GmailCredentials | undefined;
  try {
    stored = await readGmailCredentials(stateDir, keys.account);
  } catch {
    stored = undefined;
  }
  const progress = (line: string): void => console.error(line);
  const result = await runGmailSetup({
    ...keys,
    client,
    stored,
    reauth: v.reauth,
    endpoints,
    consent: (url, fromLoopback) => consent(url, fromLoopback, v['no-browser'], keys.account),
    saveCredentials: (credentials) => writeGmailCredentials(stateDir, keys.account, credentials),
    progress,
  });

  const step = `[${STEP_CONFIG}/${SETUP_STEPS}] config ${configPath}`;
  let outcome: string;
  try {
    const { original, edited } = await editedConfig(configPath, keys);
    if (edited === original) outcome = 'unchanged';
    else {
      await writeFileAtomic(configPath, edited, { mode: 0o600, dirMode: 0o700 });
      outcome = 'written';
    }
  } catch (err) {
    throw new SetupStepError(`${step} failed: ${errorMessage(err)}`);
  }
  progress(`${step} … ${outcome}`);
  console.log(
    [
      `Gmail ${keys.account} is set up (${keys.mode} mode${keys.mode === 'push' ? ` to ${keys.pushEndpoint}` : ''}).`,
      asRun(`Start it with: hookgate webhooks gmail run --config '${configPath}'  (or hookgate gateway)`),
      result.authorized ? `Note: ${TESTING_MODE}` : undefined,
    ]
      .filter(Boolean)
      .join('\n'),
  );
  return 0;
}

/** The config text as it is (or would be written on first run) and with the setup applied and validated. */
async function editedConfig(
  configPath: string,
  keys: GmailSetupKeys,
): Promise<{ original: string | undefined; edited: string }> {
  let original: string | undefined;
  try {
    original = await readFile(configPath, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const edited = applyGmailSetup(original ?? defaultConfigText(), keys, configPath);
  // Exactly what a start checks of the two parts setup touches: the gateway keys and the hooks block.
  const parsed = JSON5.parse<Record<string, unknown>>(edited);
  resolveGatewaySettings(parsed, configPath);
  resolveHooksConfig(selectStandaloneConfig(parsed), path.dirname(configPath), configPath);
  return { original, edited };
}

/** Shows the consent URL and waits for the loopback redirect or, without a browser, a pasted code. */
async function consent(
  url: string,
  fromLoopback: Promise<Callback>,
  noBrowser: boolean,
  account: string,
): Promise<Callback> {
  const opened = !noBrowser && openBrowser(url);
  console.error(
    opened
      ? `Opened Google's consent page in your browser; sign in as ${account} and allow access. If no browser opened, visit:\n  ${url}`
      : `Visit this URL in a browser, sign in as ${account} and allow access:\n  ${url}`,
  );
  const waits: Promise<Callback>[] = [fromLoopback];
  let stopReading = (): void => {};
  if (!opened) {
    console.error(
      'Then paste the code, or the whole address of the page Google sent you to, here and press Enter ' +
        '(on this machine the page finishes by itself):',
    );
    const rl = createInterface({ input: process.stdin, terminal: false });
    stopReading = () => {
      rl.close();
      process.stdin.destroy();
    };
    waits.push(
      new Promise<Callback>((resolve) => {
        rl.on('line', (line) => {
          if (line.trim()) resolve(parsePastedCallbackFor(line));
        });
      }),
    );
  }
  let timer: NodeJS.Timeout | undefined;
  waits.push(
    new Promise<Callback>((resolve) => {
      timer = setTimeout(
        () => resolve({ error: 'no answer from the consent page within 10 minutes' }),
        CONSENT_TIMEOUT_MS,
      );
    }),
  );
  try {
    return await Promise.race(waits);
  } finally {
    clearTimeout(timer);
    stopReading();
  }

  function parsePastedCallbackFor(line: string): Callback {
    const state = new URL(url).searchParams.get('state') ?? '';
    return parsePastedCallback(line, state);
  }
}

/** Opens url in the desktop's browser when there is one; false when there is none or it failed to start. */
function openBrowser(url: string): boolean {
  let command: string;
  let args: string[];
  if (process.platform === 'darwin') [command, args] = ['open', [url]];
  else if (process.platform === 'win32') [command, args] = ['rundll32', ['url.dll,FileProtocolHandler', url]];
  else if (process.env.DISPLAY || process.env.WAYLAND_DISPLAY) [command, args] = ['xdg-open', [url]];
  else return false;
  try {
    const child = spawn(command, args, { stdio: 'ignore', detached: true });
    child.on('error', () => {});
    child.unref();
    return true;
  } catch {
    return false;
  }
}
