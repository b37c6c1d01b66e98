// Push mode: an HTTP server on hooks.gmail.serve that takes Pub/Sub's pushes. Each push must carry a
// valid OIDC token (push-jwt.ts), else 401 and nothing happens. A valid push starts a sync; the push
// is answered 204 (Pub/Sub's acknowledgement) only once the sync delivered everything, and 503
// otherwise so Pub/Sub sends it again with its own backoff.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HookError, refuse, writeError, writeJson } from '../plugin/host-kit.ts';
import type { Logger } from '../plugin/host.ts';
import { LimitedWarnings } from '../plugin/kits/node-http.ts';
import type { GoogleCerts } from './google-certs.ts';
import { PushTokenRefused, verifyPushJwt } from './push-jwt.ts';

export interface PushServerOptions {
  bind: string;
  port: number;
  path: string;
  audience: string;
  serviceAccount: string | undefined;
  account: string;
  certs: GoogleCerts;
  logger: Logger;
  /** A verified notification arrived; resolves when it is safe to acknowledge, rejects otherwise. */
  onNotification: () => Promise<void>;
}

/** A push body is small JSON; anything larger is not Pub/Sub. */
const MAX_BODY_BYTES = 64 * 1024;

export interface PushServer {
  url: string;
  close(): Promise<void>;
}

export async function startPushServer(given: PushServerOptions): Promise<PushServer> {
  // Anyone who finds the endpoint can have pushes refused: those warnings are rate-limited.
  const logger = new LimitedWarnings(given.logger);
  const options = { ...given, logger };
  const server: Server = createServer((req, res) => {
    handle(req, options).then(
      (status) => (status === 204 ? res.writeHead(204).end() : writeJson(res, status, { ok: status < 300 })),
      (err: unknown) =>
        writeError(
          res,
          err instanceof HookError ? err : refuse.overloaded('the notification could not be processed yet; retry'),
        ),
    );
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.bind, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.bind.includes(':') ? `[${options.bind}]` : options.bind;
  return {
    url: `http://${host}:${port}${options.path}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        logger.flush();
      }),
  };
}

async function handle(req: IncomingMessage, o: PushServerOptions): Promise<number> {
  const path = (req.url ?? '/').split('?', 1)[0];
  if (path !== o.path) throw refuse.notFound();
  if (req.method !== 'POST') throw refuse.methodNotAllowed();
  const auth = req.headers.authorization ?? '';
  const token = /^Bearer ([A-Za-z0-9_.-]{1,8192})$/.exec(auth)?.[1];
  try {
    if (token === undefined) throw new PushTokenRefused('no bearer token');
    await verifyPushJwt(token, o.certs, { audience: o.audience, serviceAccount: o.serviceAccount });
  } catch (err) {
    if (!(err instanceof PushTokenRefused)) {
      // Google's keys could not be fetched: not the sender's fault, so Pub/Sub should retry.
      o.logger.warn('gmail push: cannot check the token now', { reason: (err as Error).message });
      throw refuse.overloaded('cannot verify the token right now; retry');
    }
    o.logger.warn('gmail push refused', { reason: err.message });
    throw refuse.unauthorized('missing or invalid push token');
  }
  const body = await readBody(req);
  let emailAddress: unknown;
  try {
    const envelope = JSON.parse(body) as { message?: { data?: unknown } };
    const data =
      typeof envelope.message?.data === 'string' ? Buffer.from(envelope.message.data, 'base64').toString('utf8') : '';
    emailAddress = (JSON.parse(data) as { emailAddress?: unknown }).emailAddress;
  } catch {
    throw refuse.badRequest('not a Pub/Sub push of a Gmail notification');
  }
  // Another mailbox's notification on a shared topic: acknowledged, nothing to do here.
  if (typeof emailAddress === 'string' && emailAddress.toLowerCase() !== o.account.toLowerCase()) return 204;
  await o.onNotification();
  return 204;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        reject(refuse.payloadTooLarge(MAX_BODY_BYTES));
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
