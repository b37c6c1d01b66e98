// The page's calls to the admin API, under the console's path (api/…, relative, so the same files
// work at /ui/ and at /hookgate/ui/). The session cookie goes by itself; every change carries the
// anti-forgery token from GET api/session in a header, never in a URL.

/**
 * The session's answer (its anti-forgery token), asked for once at the start, beside the first
 * view's data.
 */
let session;

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function call(path, init) {
  const response = await fetch(path, { credentials: 'same-origin', cache: 'no-store', ...init });
  const type = response.headers.get('content-type') ?? '';
  const body = type.includes('json') ? await response.json() : await response.text();
  if (response.status === 401) {
    // The session ended (logout elsewhere, expiry, a new gateway token): back to the login form.
    location.reload();
    throw new ApiError(401, 'unauthorized', 'the session ended: log in again');
  }
  if (!response.ok) throw new ApiError(response.status, body?.code, body?.error ?? `HTTP ${response.status}`);
  return body;
}

/** Reads the session: its anti-forgery token is kept for the changes that follow. */
export function openSession() {
  session = call('api/session', { headers: { accept: 'application/json' } });
  return session;
}

export function get(path, query) {
  const search = query
    ? new URLSearchParams(Object.entries(query).filter(([, v]) => v !== undefined && v !== ''))
    : undefined;
  const suffix = search && String(search) ? `?${search}` : '';
  return call(`api/${path}${suffix}`, { headers: { accept: 'application/json' } });
}

export async function post(path, body) {
  const { csrf } = await session;
  return call(path.startsWith('/') ? path.slice(1) : `api/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', 'x-hookgate-csrf': csrf },
    body: JSON.stringify(body ?? {}),
  });
}

/**
 * The live tail: server-sent events of new request-log entries, while the view is open; past 500 a
 * second the server counts the rest instead (`onSkipped` with how many).
 */
export function liveRequests(query, onEntry, onSkipped) {
  const search = new URLSearchParams(Object.entries(query).filter(([, v]) => v !== undefined && v !== ''));
  const source = new EventSource(`api/requests/live${String(search) ? `?${search}` : ''}`);
  source.addEventListener('request', (event) => onEntry(JSON.parse(event.data)));
  source.addEventListener('skipped', (event) => onSkipped(JSON.parse(event.data).count));
  return () => source.close();
}

export function logout() {
  return post('/logout');
}

/** `api/…` path segments, each encoded: a sender's name may hold any character. */
export function pathOf(...parts) {
  return parts.map((part) => encodeURIComponent(part)).join('/');
}
