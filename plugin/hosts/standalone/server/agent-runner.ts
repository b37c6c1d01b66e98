// Runs one agent turn for the standalone gateway: a single user message sent to a model provider.
//
// Model refs are "<provider>/<model>", split at the first slash. The built-in provider "echo" answers
// with the prompt itself, offline; every other provider is an OpenAI-compatible chat-completions API.
// run() never throws: every failure becomes an outcome with a one-line reason that never contains the
// provider's API key, in any form the provider may echo it (nor does a reply). A failure that may
// pass (no HTTP answer, 429, 5xx) is marked retryable, with the provider's Retry-After; a timeout is
// not (the model may still be working on it). A call is bounded from the request to the answer's last
// byte by the turn's time limit: a provider that stalls mid-answer times the turn out, and the turn's
// signal (a shutdown) ends the read at once.
import { oneLine, truncate } from '../../../util/text.ts';
import { SecretRedactor } from '../../../util/secret-redactor.ts';
import { boundedFetch, ExchangeTimeout, type BoundedAnswer } from '../../../util/bounded-fetch.ts';

export interface ProviderConfig {
  baseUrl: string;
  apiKey?: string;
}

export interface RunnerConfig {
  defaultModel: string;
  providers: Record<string, ProviderConfig>;
}

export interface TurnRequest {
  prompt: string;
  model?: string;
  thinking?: string;
  /** The turn's time limit: the provider's whole answer, its last byte included, must come within it. */
  timeoutMs: number;
  signal: AbortSignal;
}

/** An error that may pass when tried again, and the wait the provider announced (Retry-After). */
export interface TurnFailure {
  status: 'error';
  error: string;
  retryable?: true;
  retryAfterMs?: number;
}

/** usage: the answer's usage.total_tokens, when it reported one (budgets count it). */
export type TurnOutcome =
  { status: 'ok'; reply: string; usage?: { totalTokens: number } } | TurnFailure | { status: 'timeout'; error: string };

const DEFAULT_MODEL = 'echo/echo';
const ECHO = 'echo';
const MAX_PROVIDER_MESSAGE = 300;
const MAX_QUOTED = 200;

const TIMED_OUT: TurnOutcome = { status: 'timeout', error: 'timed out' };

function fail(error: string): TurnOutcome {
  return { status: 'error', error };
}

/** The provider did not answer, or answered 429 or 5xx: the same request may pass later. */
function failRetryable(error: string, retryAfterMs?: number): TurnOutcome {
  return { status: 'error', error, retryable: true, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
}

/** Whether an HTTP status says "not now" rather than "not this request". */
function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

/** Retry-After as delay-seconds or an HTTP date (RFC 9110 10.2.3), in ms from now; undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // Every HTTP-date form opens with the day's name; Date.parse alone takes "-5" for a year.
  if (!/^[A-Za-z]{3}/.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** For user-controlled names inside messages: one line, bounded. */
function q(text: string): string {
  return `"${truncate(oneLine(text), MAX_QUOTED)}"`;
}

function joinUrl(base: string, suffix: string): string {
  return base.replace(/\/+$/, '') + '/' + suffix.replace(/^\/+/, '');
}

function errorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  const nested = (err as { errors?: unknown }).errors;
  if (Array.isArray(nested)) {
    for (const e of nested) {
      const c = errorCode(e);
      if (c) return c;
    }
  }
  return undefined;
}

function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

/** Why fetch() itself failed (no HTTP answer at all). */
function networkReason(err: unknown): string {
  const cause = typeof err === 'object' && err !== null ? (err as { cause?: unknown }).cause : undefined;
  const code = errorCode(cause) ?? errorCode(err);
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host not found';
    case 'ECONNRESET':
      return 'connection reset';
    case 'EPIPE':
    case 'UND_ERR_SOCKET':
      return 'connection closed unexpectedly';
    case 'ETIMEDOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
      return 'connection timed out';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
    case 'UND_ERR_HEADERS_TIMEOUT':
      return 'no response headers in time';
    case 'UND_ERR_BODY_TIMEOUT':
      return 'response body stalled';
    default: {
      const detail = cause !== undefined ? errorMessage(cause) : errorMessage(err);
      return code ? `${detail} (${code})` : detail;
    }
  }
}

/** The provider's own explanation in an error body, OpenAI style or close to it. */
function providerMessage(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const b = body as { error?: unknown; message?: unknown; detail?: unknown };
  if (typeof b.error === 'object' && b.error !== null) {
    const m = (b.error as { message?: unknown }).message;
    if (typeof m === 'string' && m.trim() !== '') return m;
  }
  if (typeof b.error === 'string' && b.error.trim() !== '') return b.error;
  if (typeof b.message === 'string' && b.message.trim() !== '') return b.message;
  if (typeof b.detail === 'string' && b.detail.trim() !== '') return b.detail;
  return undefined;
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

/** choices[0].message of a completion, when it has one. */
function firstMessage(body: unknown): { content?: unknown; refusal?: unknown } | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const choices = (body as { choices?: unknown }).choices;
  if (!Array.isArray(choices)) return undefined;
  const first: unknown = choices[0];
  if (typeof first !== 'object' || first === null) return undefined;
  const message = (first as { message?: unknown }).message;
  return typeof message === 'object' && message !== null ? message : undefined;
}

/** choices[0].message.content as text; undefined when there is none. */
function completionText(body: unknown): string | undefined {
  const content = firstMessage(body)?.content;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return undefined;
  const texts: string[] = [];
  for (const part of content) {
    if (typeof part === 'string') {
      texts.push(part);
      continue;
    }
    if (typeof part !== 'object' || part === null) continue;
    const p = part as { type?: unknown; text?: unknown };
    const textual = p.type === undefined || p.type === 'text' || p.type === 'output_text';
    if (textual && typeof p.text === 'string') texts.push(p.text);
  }
  return texts.length > 0 ? texts.join('') : undefined;
}

/** usage.total_tokens of an OpenAI-compatible answer, when it is a count. */
function totalTokensOf(body: unknown): number | undefined {
  const usage = (body as { usage?: unknown }).usage;
  if (typeof usage !== 'object' || usage === null) return undefined;
  const total = (usage as { total_tokens?: unknown }).total_tokens;
  return typeof total === 'number' && Number.isSafeInteger(total) && total >= 0 ? total : undefined;
}

function refusalText(body: unknown): string | undefined {
  const refusal = firstMessage(body)?.refusal;
  return typeof refusal === 'string' && refusal.trim() !== '' ? refusal : undefined;
}

export class AgentRunner {
  readonly #getConfig: () => RunnerConfig;

  constructor(getConfig: () => RunnerConfig) {
    this.#getConfig = getConfig;
  }

  async run(req: TurnRequest): Promise<TurnOutcome> {
    let secret: SecretRedactor | undefined;
    const redact = (text: string): string => secret?.redact(text) ?? text;
    try {
      const outcome = await this.#run(req, (key) => {
        secret = new SecretRedactor([key]);
      });
      // A provider echoing its key in an answer must not pass it on to a chat or a session either.
      if (outcome.status === 'ok') return secret ? { ...outcome, reply: redact(outcome.reply) } : outcome;
      return { ...outcome, error: redact(outcome.error) };
    } catch (err) {
      if (req.signal?.aborted) return TIMED_OUT;
      return fail(redact(oneLine(`agent turn failed: ${errorMessage(err)}`)));
    }
  }

  async #run(req: TurnRequest, useSecret: (key: string) => void): Promise<TurnOutcome> {
    const config = this.#getConfig();
    const requested = typeof req.model === 'string' ? req.model.trim() : '';
    const configured = typeof config.defaultModel === 'string' ? config.defaultModel.trim() : '';
    const ref = requested || configured || DEFAULT_MODEL;

    const slash = ref.indexOf('/');
    if (slash < 0) return fail(`invalid model ${q(ref)}: expected "<provider>/<model>"`);
    const providerName = ref.slice(0, slash);
    const model = ref.slice(slash + 1);
    if (providerName === '' || model === '') {
      return fail(`invalid model ${q(ref)}: expected "<provider>/<model>"`);
    }

    const providers = config.providers ?? {};
    const provider = Object.hasOwn(providers, providerName) ? providers[providerName] : undefined;
    if (provider === undefined) {
      if (providerName === ECHO) return this.#echo(req);
      return fail(`unknown model provider ${q(providerName)} (model ${q(ref)})`);
    }
    if (typeof provider.apiKey === 'string' && provider.apiKey !== '') useSecret(provider.apiKey);
    return this.#chatCompletion(providerName, model, provider, req);
  }

  /** Offline and instant: answers within the same tick, with nothing to abort. */
  async #echo(req: TurnRequest): Promise<TurnOutcome> {
    return { status: 'ok', reply: req.prompt };
  }

  async #chatCompletion(name: string, model: string, provider: ProviderConfig, req: TurnRequest): Promise<TurnOutcome> {
    const who = `model provider ${q(name)}`;
    if (typeof provider.baseUrl !== 'string' || provider.baseUrl.trim() === '') {
      return fail(`${who} has no baseUrl`);
    }
    let url: URL;
    try {
      url = new URL(provider.baseUrl.trim());
    } catch {
      return fail(`${who} has an invalid baseUrl`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      return fail(`${who} has a baseUrl that is not http(s)`);
    }
    if (url.username !== '' || url.password !== '') {
      return fail(`${who} has credentials in its baseUrl; put the key in apiKey instead`);
    }
    url.pathname = joinUrl(url.pathname, 'chat/completions');
    url.hash = '';
    // Origin only: never echo credentials or query strings that may sit in the configured URL.
    const where = url.origin;

    if (req.signal.aborted) return TIMED_OUT;

    const body: Record<string, unknown> = {
      model,
      messages: [{ role: 'user', content: req.prompt }],
    };
    if (typeof req.thinking === 'string' && req.thinking !== '') body.reasoning_effort = req.thinking;

    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json',
    };
    if (typeof provider.apiKey === 'string' && provider.apiKey !== '') {
      headers.authorization = `Bearer ${provider.apiKey}`;
    }

    let res: BoundedAnswer;
    try {
      const init = { method: 'POST', headers, body: JSON.stringify(body) };
      res = await boundedFetch(url, init, { timeoutMs: req.timeoutMs, signal: req.signal });
    } catch (err) {
      if (req.signal.aborted || err instanceof ExchangeTimeout) return TIMED_OUT;
      // No HTTP answer: the provider never took the request.
      return failRetryable(oneLine(`${who} at ${where} failed: ${networkReason(err)}`));
    }
    if (res.cut !== undefined) {
      return fail(oneLine(`${who} at ${where}: reading the response failed: ${networkReason(res.cut)}`));
    }
    const text = res.body.toString('utf8');

    const parsed = parseJson(text);
    if (!res.ok) {
      const status = `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`;
      const detail = parsed.ok ? providerMessage(parsed.value) : undefined;
      const suffix = detail ? `: ${truncate(oneLine(detail), MAX_PROVIDER_MESSAGE)}` : '';
      const error = oneLine(`${who} answered ${status}${suffix}`);
      return isRetryableStatus(res.status)
        ? failRetryable(error, retryAfterMs(res.headers.get('retry-after')))
        : fail(error);
    }
    if (!parsed.ok) return fail(`${who} answered with invalid JSON (HTTP ${res.status})`);

    const reply = completionText(parsed.value);
    if (reply !== undefined) {
      const totalTokens = totalTokensOf(parsed.value);
      return { status: 'ok', reply, ...(totalTokens !== undefined ? { usage: { totalTokens } } : {}) };
    }

    const refusal = refusalText(parsed.value);
    if (refusal) return fail(oneLine(`${who}: the model refused: ${truncate(refusal, MAX_PROVIDER_MESSAGE)}`));
    const detail = providerMessage(parsed.value);
    const suffix = detail ? `: ${truncate(oneLine(detail), MAX_PROVIDER_MESSAGE)}` : '';
    return fail(oneLine(`${who} answered without message content (choices[0].message.content)${suffix}`));
  }
}
