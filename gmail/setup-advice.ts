// What to do when a step of `webhooks gmail setup` fails, in the user's Google project's terms. The
// generic hints of GoogleApiError fit a running watcher; setup knows which step failed and can say
// which API to enable, which role is missing, or that the project id is wrong.
import { GoogleApiError } from './google-request.ts';
import { errorMessage } from '../plugin/util/errors.ts';

export type SetupStepKind = 'authorize' | 'account' | 'topic' | 'grant' | 'subscription' | 'watch';

/** A setup step that failed: the step, Google's answer (status, reason, message) and what to do. */
export class SetupStepError extends Error {
  override readonly name = 'SetupStepError';
}

const TESTING_MODE =
  'If the OAuth consent screen is in "Testing", Google expires refresh tokens after 7 days: ' +
  'publish the app (Audience > Publish app) or run setup again each week.';

export function adviceFor(kind: SetupStepKind, err: GoogleApiError, project: string): string {
  const api = kind === 'watch' || kind === 'account' ? 'gmail.googleapis.com' : 'pubsub.googleapis.com';
  const apiName = api === 'gmail.googleapis.com' ? 'Gmail API' : 'Cloud Pub/Sub API';
  if (err.reason === 'SERVICE_DISABLED' || err.reason === 'accessNotConfigured')
    return `Enable the ${apiName} in project ${project}: https://console.cloud.google.com/apis/library/${api}?project=${encodeURIComponent(project)}, wait a minute, then run setup again.`;
  if (err.googleStatus === 'invalid_grant')
    return kind === 'authorize'
      ? 'The code expired or was already used; run setup again and finish the consent within a few minutes.'
      : `The refresh token was revoked or has expired; run setup with --reauth. ${TESTING_MODE}`;
  if (err.googleStatus === 'invalid_client' || err.googleStatus === 'unauthorized_client')
    return 'The OAuth client in --client-secret was deleted or its secret changed; download its JSON again.';
  if (err.status === 404 && kind !== 'watch')
    return `Project "${project}" was not found or your account cannot see it: --project takes the project ID (as in the console's project picker, e.g. my-project-123456), not its name or number.`;
  if (err.status === 403 && kind === 'grant')
    return `Your account may not change the topic's IAM policy: it needs Pub/Sub Admin (roles/pubsub.admin) or Owner on project ${project}. Or have an admin grant roles/pubsub.publisher on the topic to gmail-api-push@system.gserviceaccount.com, then run setup again.`;
  if (err.status === 403 && (kind === 'topic' || kind === 'subscription'))
    return `Your account may not manage Pub/Sub in project ${project}: it needs Pub/Sub Editor (roles/pubsub.editor) or Owner there; check that --project is the right project ID.`;
  if (err.status === 403 && kind === 'watch')
    return 'Gmail could not publish to the topic: the publisher grant can take a minute to apply; run setup again shortly. If it persists, check the topic\u2019s IAM policy lists gmail-api-push@system.gserviceaccount.com as Pub/Sub Publisher.';
  if (err.status === 403) return `${err.hint} ${TESTING_MODE}`;
  return err.hint;
}

/** `[3/6] publisher grant failed: HTTP 403 PERMISSION_DENIED: <Google's sentence>. <what to do>` */
export function setupFailure(label: string, kind: SetupStepKind, err: unknown, project: string): SetupStepError {
  if (err instanceof GoogleApiError) {
    const what = [err.status ? `HTTP ${err.status}` : 'no answer', err.googleStatus, err.reason]
      .filter((part, i, all) => part && all.indexOf(part) === i)
      .join(' ');
    const google = err.googleMessage ? `: ${err.googleMessage.replace(/\.$/, '')}` : '';
    return new SetupStepError(`${label} failed: ${what}${google}. ${adviceFor(kind, err, project)}`);
  }
  return new SetupStepError(`${label} failed: ${errorMessage(err)}`);
}

export { TESTING_MODE };
