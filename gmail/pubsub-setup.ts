// The Pub/Sub side of `webhooks gmail setup`: the topic Gmail publishes to, Gmail's right to publish
// there, and the subscription hookgate reads. Each step reads first and writes only what is missing, so
// a second setup makes no write call; a subscription that exists but is wrong is reported, not reused.
import type { AccessTokenSource } from './access-token.ts';
import { segment } from './google-endpoints.ts';
import { GoogleApiError, googleRequest, type GoogleRequestOptions } from './google-request.ts';

/** The service account Gmail publishes notifications as. */
export const GMAIL_PUBLISHER = 'serviceAccount:gmail-api-push@system.gserviceaccount.com';
export const PUBLISHER_ROLE = 'roles/pubsub.publisher';
/** Time to acknowledge a pulled or pushed notification before Pub/Sub redelivers it. */
const ACK_DEADLINE_SECONDS = 60;
/** Rounds of IAM read-modify-write when another writer changes the policy in between (etag). */
const IAM_ATTEMPTS = 3;

export interface PubsubTarget {
  pubsubUrl: string;
  tokens: AccessTokenSource;
  project: string;
}

export interface SubscriptionWanted {
  subscription: string;
  topic: string;
  mode: 'pull' | 'push';
  pushEndpoint?: string;
  /** The service account Pub/Sub signs the push's OIDC token as. */
  pushServiceAccount?: string;
}

/** A subscription that exists but not as asked: reported with what differs, never silently reused. */
export class SubscriptionMismatch extends Error {
  override readonly name = 'SubscriptionMismatch';
}

export function topicName(project: string, topic: string): string {
  return `projects/${project}/topics/${topic}`;
}

function subscriptionName(project: string, subscription: string): string {
  return `projects/${project}/subscriptions/${subscription}`;
}

async function call<T>(t: PubsubTarget, options: Omit<GoogleRequestOptions, 'accessToken'>): Promise<T> {
  return t.tokens.authorized((accessToken) => googleRequest<T>({ ...options, accessToken }));
}

async function exists(t: PubsubTarget, step: string, url: string): Promise<Record<string, unknown> | undefined> {
  try {
    return await call<Record<string, unknown>>(t, { step, url });
  } catch (err) {
    if (err instanceof GoogleApiError && err.status === 404) return undefined;
    throw err;
  }
}

/** Creates the topic unless it exists. A 404 on create means the project, not the topic. */
export async function ensureTopic(t: PubsubTarget, topic: string, step: string): Promise<'exists' | 'created'> {
  const url = `${t.pubsubUrl}/projects/${segment(t.project)}/topics/${segment(topic)}`;
  if (await exists(t, step, url)) return 'exists';
  try {
    await call(t, { step, url, method: 'PUT', json: {} });
    return 'created';
  } catch (err) {
    // Someone created it between our read and our write: it exists, which is what we wanted.
    if (err instanceof GoogleApiError && err.status === 409) return 'exists';
    throw err;
  }
}

interface Binding {
  role?: string;
  members?: string[];
  condition?: unknown;
}
interface Policy {
  version?: number;
  etag?: string;
  bindings?: Binding[];
}

/**
 * Grants Gmail's publisher the publisher role on the topic: read the policy, add the member if it lacks
 * it (other bindings kept as they are), write it back with the etag read; a concurrent change (409
 * ABORTED) means reading again.
 */
export async function ensurePublisherGrant(
  t: PubsubTarget,
  topic: string,
  step: string,
): Promise<'already granted' | 'granted'> {
  const resource = `${t.pubsubUrl}/projects/${segment(t.project)}/topics/${segment(topic)}`;
  for (let attempt = 1; ; attempt++) {
    // Version 3 so that conditional bindings, if any, are read whole and written back unchanged.
    const policy = await call<Policy>(t, {
      step,
      url: `${resource}:getIamPolicy`,
      query: { 'options.requestedPolicyVersion': 3 },
    });
    const bindings = Array.isArray(policy.bindings) ? policy.bindings : [];
    const granted = bindings.some(
      (b) => b.role === PUBLISHER_ROLE && !b.condition && b.members?.includes(GMAIL_PUBLISHER),
    );
    if (granted) return 'already granted';
    const plain = bindings.find((b) => b.role === PUBLISHER_ROLE && !b.condition);
    const next: Binding[] = plain
      ? bindings.map((b) => (b === plain ? { ...b, members: [...(b.members ?? []), GMAIL_PUBLISHER] } : b))
      : [...bindings, { role: PUBLISHER_ROLE, members: [GMAIL_PUBLISHER] }];
    try {
      await call(t, {
        step,
        url: `${resource}:setIamPolicy`,
        method: 'POST',
        json: { policy: { ...policy, bindings: next } },
      });
      return 'granted';
    } catch (err) {
      if (err instanceof GoogleApiError && err.status === 409 && attempt < IAM_ATTEMPTS) continue;
      throw err;
    }
  }
}

/** Creates the subscription unless it exists; an existing one must read from the topic in the mode asked. */
export async function ensureSubscription(
  t: PubsubTarget,
  want: SubscriptionWanted,
  step: string,
): Promise<'exists' | 'created'> {
  const url = `${t.pubsubUrl}/projects/${segment(t.project)}/subscriptions/${segment(want.subscription)}`;
  const topic = topicName(t.project, want.topic);
  const found = await exists(t, step, url);
  if (found) {
    checkExisting(found, want, topic, subscriptionName(t.project, want.subscription));
    return 'exists';
  }
  const body: Record<string, unknown> = { topic, ackDeadlineSeconds: ACK_DEADLINE_SECONDS };
  if (want.mode === 'push') {
    body.pushConfig = {
      pushEndpoint: want.pushEndpoint,
      oidcToken: { serviceAccountEmail: want.pushServiceAccount, audience: want.pushEndpoint },
    };
  }
  try {
    await call(t, { step, url, method: 'PUT', json: body });
    return 'created';
  } catch (err) {
    if (err instanceof GoogleApiError && err.status === 409) {
      // Created meanwhile by someone else: check it like any existing one.
      const now = await exists(t, step, url);
      if (now) {
        checkExisting(now, want, topic, subscriptionName(t.project, want.subscription));
        return 'exists';
      }
    }
    throw err;
  }
}

function checkExisting(found: Record<string, unknown>, want: SubscriptionWanted, topic: string, name: string): void {
  const fix = `delete it (Pub/Sub > Subscriptions in the Google Cloud console) or pick another name with --subscription`;
  if (found.topic !== topic)
    throw new SubscriptionMismatch(
      `subscription ${name} exists but reads from ${String(found.topic)}, not ${topic}; ${fix}`,
    );
  const push = (found.pushConfig ?? {}) as { pushEndpoint?: string; oidcToken?: { serviceAccountEmail?: string } };
  const isPush = typeof push.pushEndpoint === 'string' && push.pushEndpoint !== '';
  if (want.mode === 'pull' && isPush)
    throw new SubscriptionMismatch(`subscription ${name} exists in push mode, not pull; ${fix}`);
  if (want.mode === 'push') {
    if (!isPush) throw new SubscriptionMismatch(`subscription ${name} exists in pull mode, not push; ${fix}`);
    if (push.pushEndpoint !== want.pushEndpoint)
      throw new SubscriptionMismatch(
        `subscription ${name} pushes to ${push.pushEndpoint}, not ${want.pushEndpoint}; ${fix}`,
      );
    if (push.oidcToken?.serviceAccountEmail !== want.pushServiceAccount)
      throw new SubscriptionMismatch(
        `subscription ${name} pushes ${push.oidcToken ? `with an OIDC token of ${push.oidcToken.serviceAccountEmail}` : 'without an OIDC token'}, not one of ${want.pushServiceAccount}; ${fix}`,
      );
  }
}
