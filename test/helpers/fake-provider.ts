// A fake OpenAI-compatible model provider on loopback: records requests (their count is the calls
// made), answers as told; by default a completion that reports its usage as OpenAI does.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ProviderRequest {
  path: string;
  authorization?: string;
  body: any;
}

export interface FakeProvider {
  baseUrl: string;
  requests: ProviderRequest[];
  close(): Promise<void>;
}

/**
 * `answer` gets the parsed request and writes the response; default: a completion echoing
 * "fake: <content>" with `usage` (prompt tokens: the content's length / 4, rounded up; 1 completion token).
 */
export async function startFakeProvider(
  answer?: (req: ProviderRequest, res: ServerResponse) => void,
): Promise<FakeProvider> {
  const requests: ProviderRequest[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      const r: ProviderRequest = {
        path: req.url ?? '',
        authorization: req.headers.authorization,
        body: JSON.parse(raw || '{}'),
      };
      requests.push(r);
      if (answer) return answer(r, res);
      res.setHeader('content-type', 'application/json');
      const chars: number = r.body.messages?.[0]?.content?.length ?? 0;
      const promptTokens = Math.ceil(chars / 4);
      res.end(
        JSON.stringify({
          choices: [{ message: { role: 'assistant', content: `fake: ${chars} chars` } }],
          usage: { prompt_tokens: promptTokens, completion_tokens: 1, total_tokens: promptTokens + 1 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A streamed chat completion (server-sent events) whose whole reply is `text`. */
export function streamReply(res: ServerResponse, text: string): void {
  const chunk = (delta: object, finish: string | null): string =>
    `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm1', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(chunk({ role: 'assistant', content: text }, null));
  res.write(chunk({}, 'stop'));
  res.end('data: [DONE]\n\n');
}
