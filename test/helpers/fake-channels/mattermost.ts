// A fake Mattermost: POST /api/v4/posts (201 with the post), GET /api/v4/users/me, and an incoming
// webhook (200 "ok"). Errors are `{ id, message, detailed_error, request_id, status_code }`; its rate
// limit (10 a second) answers 429 with X-Ratelimit-* headers and the text "limit exceeded".
import { FakePlatform } from './fake-platform.ts';

export function fakeMattermost(token: string, webhookPath = '/hooks/mattermosthookid0123456'): Promise<FakePlatform> {
  let n = 0;
  const error = (status: number, id: string, message: string) => ({
    status,
    body: { id, message, detailed_error: '', request_id: 'req1', status_code: status },
  });
  return new FakePlatform((a, fake) => {
    if (fake.overLimit('all', 10, 1000, a.at))
      return {
        status: 429,
        headers: { 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '1' },
        body: 'limit exceeded\n',
      };
    if (a.path === webhookPath)
      return typeof a.body?.text === 'string' && a.body.text
        ? { status: 200, body: 'ok' }
        : error(400, 'web.incoming_webhook.text.app_error', 'No text specified.');
    if (a.headers.authorization !== `Bearer ${token}`)
      return error(401, 'api.context.session_expired.app_error', 'Invalid or expired session, please login again.');
    if (a.path === '/api/v4/users/me') return { status: 200, body: { id: 'u1', username: 'hooks-bot' } };
    if (a.path !== '/api/v4/posts')
      return error(404, 'api.context.404.app_error', 'Sorry, we could not find the page.');
    if (a.body?.channel_id === 'nochannel')
      return error(403, 'api.context.permissions.app_error', 'You do not have the appropriate permissions.');
    return { status: 201, body: { id: `post${++n}`, channel_id: a.body?.channel_id, message: a.body?.message } };
  }).start();
}
