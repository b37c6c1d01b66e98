// `webhooks gmail setup` on the Google side, step by step: authorize (or reuse the stored refresh
// token), check the account, the Pub/Sub topic, Gmail's publisher grant, the subscription, users.watch.
// Each step reports one progress line; a failure names the step, Google's answer and what to do. The
// config is the caller's last step, written only when all of these succeeded.
import { AccessTokenSource } from './access-token.ts';
import type { GmailCredentials } from './gmail-credentials.ts';
import { GmailApi } from './gmail-api.ts';
import type { GoogleEndpoints } from './google-endpoints.ts';
import { GoogleApiError, googleRequest } from './google-request.ts';
import {
  authorizationUrl,
  createPkce,
  createState,
  exchangeCode,
  missingScopes,
  startLoopbackReceiver,
  type Callback,
  type OAuthClient,
} from './installed-app-oauth.ts';
import { ensurePublisherGrant, ensureSubscription, ensureTopic, topicName } from './pubsub-setup.ts';
import { setupFailure, SetupStepError, type SetupStepKind } from './setup-advice.ts';
import { isoTime } from '../plugin/util/time-bounds.ts';

export const SETUP_STEPS = 6;

export interface GmailSetupRequest {
  account: string;
  project: string;
  topic: string;
  subscription: string;
  label: string;
  mode: 'pull' | 'push';
  pushEndpoint?: string;
  pushServiceAccount?: string;
  client: OAuthClient;
  /** The credentials stored by an earlier setup, if any. */
  stored?: GmailCredentials;
  /** Authorize again even when the stored refresh token still works. */
  reauth: boolean;
  endpoints: GoogleEndpoints;
  /**
   * Shows the consent URL to the user (browser or terminal) and settles with what came back, from the
   * loopback receiver (`fromLoopback`) or typed in.
   */
  consent(url: string, fromLoopback: Promise<Callback>): Promise<Callback>;
  /** Stores new credentials (0600); returns where. */
  saveCredentials(credentials: GmailCredentials): Promise<string>;
  /** One line per step, for stderr. */
  progress(line: string): void;
}

export interface GmailSetupResult {
  /** True when a new refresh token was obtained (and stored). */
  authorized: boolean;
  historyId: string;
  watchExpiresAt: string;
}

function label(n: number, name: string): string {
  return `[${n}/${SETUP_STEPS}] ${name}`;
}

async function step<T>(
  n: number,
  name: string,
  kind: SetupStepKind,
  project: string,
  run: () => Promise<T>,
): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof SetupStepError) throw err;
    throw setupFailure(label(n, name), kind, err, project);
  }
}

export async function runGmailSetup(r: GmailSetupRequest): Promise<GmailSetupResult> {
  const { endpoints, project } = r;
  // 1. A refresh token for the account: the stored one when it still works, else a new consent.
  const authName = `authorization ${r.account}`;
  const auth = await step(1, authName, 'authorize', project, () => authorize(r));
  r.progress(
    `${label(1, authName)} … ${auth.authorized ? 'authorized (refresh token stored)' : 'reused stored token'}`,
  );
  const { tokens } = auth;

  const pubsub = { pubsubUrl: endpoints.pubsub, tokens, project };
  const topicFull = topicName(project, r.topic);
  const topicStep = `topic ${topicFull}`;
  const topic = await step(2, topicStep, 'topic', project, () => ensureTopic(pubsub, r.topic, label(2, topicStep)));
  r.progress(`${label(2, topicStep)} … ${topic}`);

  const grantStep = 'publisher grant to gmail-api-push@system.gserviceaccount.com';
  const grant = await step(3, grantStep, 'grant', project, () =>
    ensurePublisherGrant(pubsub, r.topic, label(3, grantStep)),
  );
  r.progress(`${label(3, grantStep)} … ${grant}`);

  const subStep = `subscription ${r.subscription} (${r.mode})`;
  const sub = await step(4, subStep, 'subscription', project, () =>
    ensureSubscription(
      pubsub,
      {
        subscription: r.subscription,
        topic: r.topic,
        mode: r.mode,
        pushEndpoint: r.pushEndpoint,
        pushServiceAccount: r.pushServiceAccount,
      },
      label(4, subStep),
    ),
  );
  r.progress(`${label(4, subStep)} … ${sub}`);

  // users.watch is renewed on every run: calling it again replaces the previous watch.
  const watchStep = `gmail watch of ${r.label}`;
  const gmail = new GmailApi({ baseUrl: endpoints.gmail, tokens });
  const watch = await step(5, watchStep, 'watch', project, () => gmail.watch(topicFull, [r.label]));
  const expires = watch.expiration && /^\d+$/.test(watch.expiration) ? isoTime(Number(watch.expiration)) : undefined;
  const watchExpiresAt = expires ?? '';
  r.progress(`${label(5, watchStep)} … renewed${expires ? `, expires ${watchExpiresAt}` : ''}`);
  return { authorized: auth.authorized, historyId: watch.historyId, watchExpiresAt };
}

interface Authorization {
  tokens: AccessTokenSource;
  authorized: boolean;
}

async function authorize(r: GmailSetupRequest): Promise<Authorization> {
  const reusable =
    !r.reauth && r.stored !== undefined && r.stored.client_id === r.client.client_id
      ? { ...r.stored, client_secret: r.client.client_secret }
      : undefined;
  if (reusable) {
    const tokens = new AccessTokenSource({ credentials: reusable, tokenUrl: r.endpoints.token });
    try {
      await tokens.get();
      await checkAccount(r, tokens);
      if (reusable.client_secret !== r.stored!.client_secret) await r.saveCredentials(reusable);
      return { tokens, authorized: false };
    } catch (err) {
      // A revoked or expired grant is what a new consent fixes; anything else is reported.
      if (!(err instanceof GoogleApiError && err.grantRevoked)) throw err;
      r.progress(
        `${label(1, `authorization ${r.account}`)} … stored refresh token no longer works (revoked, or 7 days ` +
          'passed while the OAuth app is in "Testing"); authorizing again',
      );
    }
  }
  const credentials = await consent(r);
  const tokens = new AccessTokenSource({ credentials, tokenUrl: r.endpoints.token });
  await checkAccount(r, tokens);
  await r.saveCredentials(credentials);
  return { tokens, authorized: true };
}

async function consent(r: GmailSetupRequest): Promise<GmailCredentials> {
  const pkce = createPkce();
  const state = createState();
  const receiver = await startLoopbackReceiver(state);
  let callback: Callback;
  try {
    const url = authorizationUrl({
      authUrl: r.endpoints.auth,
      clientId: r.client.client_id,
      redirectUri: receiver.redirectUri,
      challenge: pkce.challenge,
      state,
      loginHint: r.account,
    });
    callback = await r.consent(url, receiver.callback);
  } finally {
    await receiver.close();
  }
  if ('error' in callback)
    throw new SetupStepError(
      `${label(1, `authorization ${r.account}`)} failed: ${callback.error === 'access_denied' ? 'consent was refused on the Google page' : callback.error}. Run setup again and allow access (if the app is in "Testing", add ${r.account} as a test user on the OAuth consent screen).`,
    );
  const granted = await exchangeCode({
    tokenUrl: r.endpoints.token,
    client: r.client,
    code: callback.code,
    verifier: pkce.verifier,
    redirectUri: receiver.redirectUri,
    step: label(1, 'authorization code exchange'),
  });
  const missing = missingScopes(granted.scopes);
  if (missing.length)
    throw new SetupStepError(
      `${label(1, `authorization ${r.account}`)} failed: access was granted without ${missing.join(' and ')}. Run setup again and tick every box on the consent page.`,
    );
  return { client_id: r.client.client_id, client_secret: r.client.client_secret, refresh_token: granted.refresh_token };
}

/** The consent may have been given in another Google account than --account: that would watch the wrong mailbox. */
async function checkAccount(r: GmailSetupRequest, tokens: AccessTokenSource): Promise<void> {
  const step = label(1, 'gmail profile');
  let profile: { emailAddress?: unknown };
  try {
    profile = await tokens.authorized((accessToken) =>
      googleRequest<{ emailAddress?: unknown }>({ step, url: `${r.endpoints.gmail}/users/me/profile`, accessToken }),
    );
  } catch (err) {
    // Not a grant problem (those mean authorizing again): named as the Gmail API's.
    if (err instanceof GoogleApiError && err.grantRevoked) throw err;
    throw setupFailure(step, 'account', err, r.project);
  }
  const email = typeof profile.emailAddress === 'string' ? profile.emailAddress : '';
  if (email.toLowerCase() !== r.account.toLowerCase())
    throw new SetupStepError(
      `${label(1, `authorization ${r.account}`)} failed: the consent was given as ${email || 'another account'}, not ${r.account}. Run setup again with --reauth and choose ${r.account} on the Google page.`,
    );
}
