// A fake WhatsApp Cloud API (Graph API): POST /<version>/<phone number id>/messages answers the
// contacts and `messages[0].id`; GET /<version>/<phone number id> the number; errors are Graph's
// `{ error: { message, type, code, error_data, fbtrace_id } }`. One message every 6 seconds to a
// user (the pair rate): more is error 131056.
import { FakePlatform } from './fake-platform.ts';

export function fakeWhatsApp(phoneNumberId: string, token: string): Promise<FakePlatform> {
  let n = 0;
  const graphError = (status: number, code: number, message: string, details?: string) => ({
    status,
    body: {
      error: {
        message,
        type: 'OAuthException',
        code,
        ...(details ? { error_data: { messaging_product: 'whatsapp', details } } : {}),
        fbtrace_id: 'AbCdEf',
      },
    },
  });
  return new FakePlatform((a, fake) => {
    const m = /^\/(v\d+\.\d+)\/(\d+)(\/messages)?$/.exec(a.path);
    if (!m || m[2] !== phoneNumberId) return graphError(400, 100, 'Unsupported post request.');
    if (a.headers.authorization !== `Bearer ${token}`)
      return graphError(401, 190, 'Invalid OAuth access token - Cannot parse access token');
    if (!m[3])
      return {
        status: 200,
        body: {
          verified_name: 'Hooks Inc',
          display_phone_number: '+1 555-0100',
          id: phoneNumberId,
          quality_rating: 'GREEN',
        },
      };
    const { to, text, type, messaging_product: product } = a.body ?? {};
    if (product !== 'whatsapp' || type !== 'text' || typeof text?.body !== 'string')
      return graphError(400, 100, '(#100) Invalid parameter');
    if (to === '15550000000') return graphError(400, 131026, 'Message undeliverable', 'Message could not be delivered');
    if (fake.overLimit(`to:${to}`, 1, 6000, a.at))
      return graphError(
        400,
        131056,
        '(#131056) (Business Account, Consumer Account) pair rate limit hit',
        'Message failed to send because there were too many messages sent from this phone number to the same phone number in a short period of time',
      );
    return {
      status: 200,
      body: {
        messaging_product: 'whatsapp',
        contacts: [{ input: to, wa_id: to }],
        messages: [{ id: `wamid.HBgL${++n}` }],
      },
    };
  }).start();
}
