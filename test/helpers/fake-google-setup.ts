// What `webhooks gmail setup` needs of the fake Google, registered onto its server: the consent page
// (redirects to the loopback with a code once the test "approves"), the authorization-code grant
// checking the PKCE verifier, and Pub/Sub admin (topics, IAM policies with etags, subscriptions). APIs
// can be switched off (403 SERVICE_DISABLED), IAM writes refused (403 PERMISSION_DENIED), and a project
// id unknown to the fake answers 404.
import { createHash, randomBytes } from 'node:crypto';
import { FakeGoogle, type FakeAnswer, type FakeRequest } from './fake-google.ts';

interface Binding {
  role: string;
  members: string[];
  condition?: unknown;
}

export interface FakePolicy {
  version: number;
  etag: string;
  bindings: Binding[];
}

interface IssuedCode {
  clientId: string;
  redirectUri: string;
  challenge: string;
  account: string;
  scopes: string[];
  used: boolean;
}

export class FakeGoogleSetup {
  /** Who approves the next consent page, and with which scopes (default all asked); undefined: nobody yet. */
  consent: { account: string; deny?: boolean; scopes?: string[] } | undefined;
  /** Project ids that exist; any other answers 404. */
  readonly projects = new Set<string>();
  /** The Pub/Sub API switched off: every admin call answers 403 SERVICE_DISABLED. */
  pubsubDisabled = false;
  /** setIamPolicy answers 403 PERMISSION_DENIED (the account lacks pubsub.topics.setIamPolicy). */
  iamDenied = false;
  readonly topics = new Set<string>();
  readonly policies = new Map<string, FakePolicy>();
  readonly #codes = new Map<string, IssuedCode>();

  constructor(readonly fake: FakeGoogle) {
    fake.authorizationCodeGrant = (req) => this.#codeGrant(req);
    fake.route('GET', /^\/o\/oauth2\/v2\/auth$/, (req) => this.#consentPage(req));
    const project = '^\\/v1\\/projects\\/(?<project>[^/]+)';
    fake.route('GET', new RegExp(`${project}\\/topics\\/(?<id>[^/:]+):getIamPolicy$`), (req, m) =>
      this.#pubsub(req, m, () => ({ body: this.policy(this.#name(m, 'topics')) })),
    );
    fake.route('POST', new RegExp(`${project}\\/topics\\/(?<id>[^/:]+):setIamPolicy$`), (req, m) =>
      this.#pubsub(req, m, () => this.#setPolicy(req, this.#name(m, 'topics'))),
    );
    fake.route('GET', new RegExp(`${project}\\/topics\\/(?<id>[^/:]+)$`), (req, m) =>
      this.#pubsub(req, m, () => {
        const name = this.#name(m, 'topics');
        return this.topics.has(name) ? { body: { name } } : notFound(name);
      }),
    );
    fake.route('PUT', new RegExp(`${project}\\/topics\\/(?<id>[^/:]+)$`), (req, m) =>
      this.#pubsub(req, m, () => {
        const name = this.#name(m, 'topics');
        if (this.topics.has(name))
          return FakeGoogle.error(
            409,
            'ALREADY_EXISTS',
            'Resource already exists in the project (resource=' + m.groups!.id! + ').',
          );
        this.topics.add(name);
        return { body: { name } };
      }),
    );
    fake.route('GET', new RegExp(`${project}\\/subscriptions\\/(?<id>[^/:]+)$`), (req, m) =>
      this.#pubsub(req, m, () => {
        const sub = fake.subscriptions.get(this.#name(m, 'subscriptions'));
        if (!sub) return notFound(m.groups!.id!);
        return {
          body: {
            name: sub.name,
            topic: sub.topic,
            ackDeadlineSeconds: sub.ackDeadlineSeconds,
            pushConfig: sub.pushConfig ?? {},
          },
        };
      }),
    );
    fake.route('PUT', new RegExp(`${project}\\/subscriptions\\/(?<id>[^/:]+)$`), (req, m) =>
      this.#pubsub(req, m, () => this.#createSubscription(req, this.#name(m, 'subscriptions'))),
    );
  }

  /** The topic's policy (an empty one with a fresh etag until set). */
  policy(topic: string): FakePolicy {
    let p = this.policies.get(topic);
    if (!p) {
      p = { version: 1, etag: newEtag(), bindings: [] };
      this.policies.set(topic, p);
    }
    return p;
  }

  #name(m: RegExpExecArray, kind: 'topics' | 'subscriptions'): string {
    return `projects/${decodeURIComponent(m.groups!.project!)}/${kind}/${decodeURIComponent(m.groups!.id!)}`;
  }

  #pubsub(req: FakeRequest, m: RegExpExecArray, handle: () => FakeAnswer): FakeAnswer {
    if (!this.fake.accountOf(req)) return FakeGoogle.unauthenticated();
    if (this.pubsubDisabled) return serviceDisabled('pubsub.googleapis.com', 'Cloud Pub/Sub API');
    const project = decodeURIComponent(m.groups!.project!);
    if (!this.projects.has(project))
      return FakeGoogle.error(
        404,
        'NOT_FOUND',
        `Requested project not found or user does not have access to it (project=${project}).`,
      );
    return handle();
  }

  #setPolicy(req: FakeRequest, topic: string): FakeAnswer {
    if (!this.topics.has(topic)) return notFound(topic);
    if (this.iamDenied)
      return FakeGoogle.error(403, 'PERMISSION_DENIED', `User not authorized to perform this action.`);
    const policy = (req.body as { policy?: Partial<FakePolicy> }).policy;
    if (!policy || !Array.isArray(policy.bindings)) return FakeGoogle.error(400, 'INVALID_ARGUMENT', 'Invalid policy.');
    const current = this.policy(topic);
    // Like IAM: a write with a stale etag is refused, so a read-modify-write never loses a change.
    if (policy.etag !== current.etag)
      return FakeGoogle.error(
        409,
        'ABORTED',
        'There were concurrent policy changes. Please retry the whole read-modify-write with exponential backoff.',
      );
    const next: FakePolicy = { version: policy.version ?? 1, etag: newEtag(), bindings: policy.bindings };
    this.policies.set(topic, next);
    return { body: next };
  }

  #createSubscription(req: FakeRequest, name: string): FakeAnswer {
    if (this.fake.subscriptions.has(name))
      return FakeGoogle.error(409, 'ALREADY_EXISTS', 'Resource already exists in the project (resource=' + name + ').');
    const body = req.body as { topic?: string; ackDeadlineSeconds?: number; pushConfig?: { pushEndpoint?: string } };
    if (typeof body.topic !== 'string' || !this.topics.has(body.topic)) return notFound(String(body.topic));
    if (body.pushConfig?.pushEndpoint !== undefined && !body.pushConfig.pushEndpoint.startsWith('https://'))
      return FakeGoogle.error(
        400,
        'INVALID_ARGUMENT',
        'Invalid push endpoint given (endpoint=…). Refer to https://cloud.google.com/pubsub/docs/push',
      );
    const sub = this.fake.subscription(name, body.topic);
    sub.topic = body.topic;
    sub.ackDeadlineSeconds = body.ackDeadlineSeconds ?? 10;
    sub.pushConfig = body.pushConfig ?? {};
    return { body: { name, topic: sub.topic, ackDeadlineSeconds: sub.ackDeadlineSeconds, pushConfig: sub.pushConfig } };
  }

  #consentPage(req: FakeRequest): FakeAnswer {
    const q = req.query;
    const clientId = q.get('client_id') ?? '';
    if (!this.fake.clients.has(clientId))
      return { status: 401, body: { error: 'invalid_client', error_description: 'The OAuth client was not found.' } };
    const redirect = q.get('redirect_uri') ?? '';
    if (!/^http:\/\/127\.0\.0\.1:\d+\/$/.test(redirect))
      return { status: 400, body: { error: 'redirect_uri_mismatch' } };
    if (q.get('response_type') !== 'code' || q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge'))
      return { status: 400, body: { error: 'invalid_request', error_description: 'PKCE S256 is required here.' } };
    if (!this.consent) return { status: 200, body: { page: 'waiting for the user' } };
    const back = new URL(redirect);
    back.searchParams.set('state', q.get('state') ?? '');
    if (this.consent.deny) back.searchParams.set('error', 'access_denied');
    else {
      const code = `4/fake-code-${randomBytes(12).toString('hex')}`;
      const asked = (q.get('scope') ?? '').split(' ').filter(Boolean);
      this.#codes.set(code, {
        clientId,
        redirectUri: redirect,
        challenge: q.get('code_challenge')!,
        account: this.consent.account,
        scopes: this.consent.scopes ?? asked,
        used: false,
      });
      back.searchParams.set('code', code);
    }
    return { status: 302, headers: { location: back.toString() } };
  }

  #codeGrant(req: FakeRequest): FakeAnswer {
    const b = req.body as Record<string, string>;
    const client = this.fake.clients.get(b.client_id ?? '');
    if (!client || client.clientSecret !== b.client_secret)
      return { status: 401, body: { error: 'invalid_client', error_description: 'The OAuth client was not found.' } };
    const issued = this.#codes.get(b.code ?? '');
    const invalid = (why: string): FakeAnswer => ({
      status: 400,
      body: { error: 'invalid_grant', error_description: why },
    });
    if (!issued || issued.used || issued.clientId !== client.clientId) return invalid('Malformed auth code.');
    if (issued.redirectUri !== b.redirect_uri) return invalid('Bad Request');
    const challenge = createHash('sha256')
      .update(b.code_verifier ?? '')
      .digest('base64url');
    if (challenge !== issued.challenge) return invalid('Invalid code verifier.');
    issued.used = true;
    const refreshToken = `1//fake-refresh-${randomBytes(16).toString('hex')}`;
    this.fake.grants.set(refreshToken, {
      account: issued.account,
      clientId: client.clientId,
      revoked: false,
      scopes: issued.scopes,
    });
    this.fake.mailbox(issued.account);
    return {
      body: {
        ...this.fake.issueAccessToken(issued.account),
        refresh_token: refreshToken,
        scope: issued.scopes.join(' '),
      },
    };
  }

  /** Write calls setup made to Pub/Sub (creating topics or subscriptions, setting IAM policies). */
  pubsubWrites(): FakeRequest[] {
    return this.fake.requests.filter(
      (r) => r.path.startsWith('/v1/projects/') && (r.method === 'PUT' || r.path.endsWith(':setIamPolicy')),
    );
  }

  /** Authorization-code grants made at the token endpoint. */
  codeGrants(): FakeRequest[] {
    return this.fake.requests.filter((r) => r.path === '/token' && r.body?.grant_type === 'authorization_code');
  }
}

function newEtag(): string {
  return randomBytes(6).toString('base64');
}

function notFound(name: string): FakeAnswer {
  return FakeGoogle.error(404, 'NOT_FOUND', `Resource not found (resource=${name.split('/').pop()}).`);
}

/** Google's answer when an API is not enabled in the project (for failNext on the Gmail routes too). */
export function serviceDisabled(service: string, title: string): FakeAnswer {
  return FakeGoogle.error(
    403,
    'PERMISSION_DENIED',
    `${title} has not been used in project 123456789 before or it is disabled. Enable it by visiting https://console.developers.google.com/apis/api/${service}/overview?project=123456789 then retry.`,
    'SERVICE_DISABLED',
  );
}
