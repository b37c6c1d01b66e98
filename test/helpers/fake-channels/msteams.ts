// A fake Teams Workflows webhook: it takes an Adaptive Card message and answers 202 with no body;
// a message over 28 KB is refused with 413 "Request Entity Too Large"; more than 4 requests a
// second get a 429 with Retry-After.
import { FakePlatform } from './fake-platform.ts';

export function fakeTeams(path = '/workflows/abc/triggers/manual/paths/invoke'): Promise<FakePlatform> {
  return new FakePlatform((a, fake) => {
    if (a.path !== path || a.query.get('sig') === null)
      return {
        status: 401,
        body: { error: { code: 'DirectApiAuthorizationRequired', message: 'The request must be authenticated.' } },
      };
    if (Buffer.byteLength(JSON.stringify(a.body)) > 28 * 1024)
      return { status: 413, body: { error: { code: 'MessageTooLarge', message: 'Request Entity Too Large' } } };
    const card = a.body?.attachments?.[0];
    if (
      a.body?.type !== 'message' ||
      card?.contentType !== 'application/vnd.microsoft.card.adaptive' ||
      card?.content?.type !== 'AdaptiveCard'
    )
      return {
        status: 400,
        body: {
          error: {
            code: 'InvalidRequestContent',
            message: 'The input body for trigger is not an Adaptive Card message.',
          },
        },
      };
    if (fake.overLimit('all', 4, 1000, a.at))
      return {
        status: 429,
        headers: { 'retry-after': '1' },
        body: { error: { code: 'TooManyRequests', message: 'Rate limit is exceeded.' } },
      };
    return { status: 202 };
  }).start();
}
