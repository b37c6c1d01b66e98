// Every Google URL hookgate calls, built in one place. With HOOKGATE_GOOGLE_API_ROOT set (tests point it
// at a local fake Google) every endpoint hangs off that one origin, with the paths DESIGN.md fixes:
// Gmail /gmail/v1/…, Pub/Sub /v1/projects/…, token /token, authorization /o/oauth2/v2/auth and
// Google's signing keys /oauth2/v3/certs. Without it, the real hosts.

export interface GoogleEndpoints {
  /** Gmail API base, e.g. https://gmail.googleapis.com/gmail/v1 (append /users/me/…). */
  readonly gmail: string;
  /** Pub/Sub API base, e.g. https://pubsub.googleapis.com/v1 (append /projects/…). */
  readonly pubsub: string;
  /** OAuth token endpoint (authorization-code and refresh-token grants). */
  readonly token: string;
  /** OAuth authorization endpoint (the browser consent page). */
  readonly auth: string;
  /** Google's JWKS for the OIDC tokens Pub/Sub push signs. */
  readonly certs: string;
}

export const GOOGLE_API_ROOT_ENV = 'HOOKGATE_GOOGLE_API_ROOT';

const REAL: GoogleEndpoints = Object.freeze({
  gmail: 'https://gmail.googleapis.com/gmail/v1',
  pubsub: 'https://pubsub.googleapis.com/v1',
  token: 'https://oauth2.googleapis.com/token',
  auth: 'https://accounts.google.com/o/oauth2/v2/auth',
  certs: 'https://www.googleapis.com/oauth2/v3/certs',
});

/** The endpoints for this environment; a malformed HOOKGATE_GOOGLE_API_ROOT is an error, not ignored. */
export function googleEndpoints(env: NodeJS.ProcessEnv = process.env): GoogleEndpoints {
  const root = env[GOOGLE_API_ROOT_ENV];
  if (root === undefined || root === '') return REAL;
  let url: URL;
  try {
    url = new URL(root);
  } catch {
    throw new Error(`${GOOGLE_API_ROOT_ENV} must be an http(s) URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`${GOOGLE_API_ROOT_ENV} must be an http(s) URL`);
  }
  const base = `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
  return Object.freeze({
    gmail: `${base}/gmail/v1`,
    pubsub: `${base}/v1`,
    token: `${base}/token`,
    auth: `${base}/o/oauth2/v2/auth`,
    certs: `${base}/oauth2/v3/certs`,
  });
}

/** One path segment of a Google URL (an id or name a user typed), escaped. */
export function segment(value: string): string {
  return encodeURIComponent(value);
}
