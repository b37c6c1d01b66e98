// A fake BlueBubbles server: POST /api/v1/message/text?password=… answers `{ status: 200, message:
// "Message sent!", data: { guid } }`; GET /api/v1/server/info; a wrong password is 401 `{ status,
// message, error: { type, message } }`.
import { FakePlatform } from './fake-platform.ts';

export function fakeBlueBubbles(password: string): Promise<FakePlatform> {
  let n = 0;
  return new FakePlatform((a) => {
    if (a.query.get('password') !== password)
      return {
        status: 401,
        body: {
          status: 401,
          message: 'You are not authorized to access this resource',
          error: { type: 'Authentication Error', message: 'Invalid password' },
        },
      };
    if (a.path === '/api/v1/server/info')
      return {
        status: 200,
        body: {
          status: 200,
          message: 'Successfully fetched server info',
          data: { server_version: '1.9.9', os_version: '14.5', private_api: false },
        },
      };
    if (a.path !== '/api/v1/message/text') return { status: 404, body: { status: 404, message: 'Not Found' } };
    const { chatGuid, message, tempGuid } = a.body ?? {};
    if (typeof chatGuid !== 'string' || typeof message !== 'string' || typeof tempGuid !== 'string')
      return {
        status: 400,
        body: {
          status: 400,
          message: 'Bad Request',
          error: { type: 'Validation Error', message: 'chatGuid, tempGuid and message are required' },
        },
      };
    if (chatGuid === 'iMessage;-;nobody')
      return {
        status: 500,
        body: {
          status: 500,
          message: 'Failed to send message!',
          error: { type: 'iMessage Error', message: 'Chat does not exist' },
        },
      };
    return {
      status: 200,
      body: { status: 200, message: 'Message sent!', data: { guid: `msg-${++n}`, text: message, tempGuid } },
    };
  }).start();
}
