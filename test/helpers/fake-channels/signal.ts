// A fake signal-cli-rest-api: POST /v2/send answers 201 `{ timestamp }`, GET /v1/about and
// /v1/accounts; errors are `{ error }`.
import { FakePlatform } from './fake-platform.ts';

export function fakeSignal(number: string): Promise<FakePlatform> {
  let ts = 1700000000000;
  return new FakePlatform((a) => {
    if (a.path === '/v1/about')
      return {
        status: 200,
        body: { versions: ['v1', 'v2'], build: 2, mode: 'json-rpc', version: '0.92', capabilities: {} },
      };
    if (a.path === '/v1/accounts') return { status: 200, body: [number] };
    if (a.path !== '/v2/send') return { status: 404, body: '404 page not found' };
    const { message, number: from, recipients } = a.body ?? {};
    if (from !== number) return { status: 400, body: { error: 'User is not registered' } };
    if (!Array.isArray(recipients) || recipients.length === 0)
      return { status: 400, body: { error: "Couldn't process request - please provide at least one recipient" } };
    if (recipients[0] === '+10000000000')
      return { status: 400, body: { error: 'Failed to send message: Unregistered user' } };
    if (typeof message !== 'string')
      return { status: 400, body: { error: "Couldn't process request - invalid request" } };
    return { status: 201, body: { timestamp: String(++ts) } };
  }).start();
}
