// A browser's side of the console, over node:http (fetch would not let a test set Origin freely):
// requests with the headers a page sends, the session cookie kept from the login, and the answers
// read whole. The console's own tests and its browser tests' set-up share it.
import { request } from 'node:http';

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json(): any;
}

export function send(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Answer> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method, headers: { ...headers, ...(body === undefined ? {} : { 'content-length': Buffer.byteLength(body) }) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: () => JSON.parse(text) });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A logged-in console client: its cookie, its anti-forgery token, and calls that carry them. */
export interface ConsoleClient {
  cookie: string;
  csrf: string;
  origin: string;
  get(path: string): Promise<Answer>;
  /** A change as the page makes it: cookie, anti-forgery header and the console's own Origin. */
  post(path: string, body?: unknown, headers?: Record<string, string>): Promise<Answer>;
}

export async function login(base: string, token: string, mount = '/ui/'): Promise<ConsoleClient> {
  const origin = new URL(base).origin;
  const answer = await send(
    base,
    'POST',
    `${mount}login`,
    { origin, 'content-type': 'application/json' },
    JSON.stringify({ token }),
  );
  if (answer.status !== 200) throw new Error(`login answered ${answer.status}: ${answer.text}`);
  const setCookie = ([] as string[]).concat(answer.headers['set-cookie'] ?? [])[0]!;
  const cookie = setCookie.split(';', 1)[0]!;
  const session = await send(base, 'GET', `${mount}api/session`, { cookie });
  const { csrf } = session.json() as { csrf: string };
  return {
    cookie,
    csrf,
    origin,
    get: (path) => send(base, 'GET', mount + path, { cookie }),
    post: (path, body, headers = {}) =>
      send(
        base,
        'POST',
        mount + path,
        { cookie, origin, 'x-hookgate-csrf': csrf, 'content-type': 'application/json', ...headers },
        body === undefined ? undefined : JSON.stringify(body),
      ),
  };
}
