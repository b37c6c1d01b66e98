// Helpers for the Gmail watcher tests: a scriptable proxy in front of the real gateway's gmail hook
// (records every batch and the gateway's answer, can answer 500 or 413 itself, or hold answers), and
// a `hookgate webhooks gmail run` process.
import type { ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EXIT_BOUND_MS, exitWithin, SOURCE_CLI, spawnCapturing } from './spawn-gateway.ts';

export interface PostedBatch {
  ids: string[];
  messages: { id: string; from: string; subject: string; snippet: string; body?: string }[];
  status: number;
  /** The gateway's answer (undefined when the proxy answered itself). */
  answer?: any;
}

export interface HookProxy {
  url: string;
  batches: PostedBatch[];
  /** The next n requests are answered with this status by the proxy itself. */
  failNext(status: number, n: number): void;
  /** Batches of more than this many messages are answered 413. */
  maxMessages: number;
  /** Wait this long before forwarding each request. */
  delayMs: number;
  /** Message id -> the distinct run ids the gateway gave it across all 2xx answers. */
  runIdsById(): Map<string, Set<string>>;
  close(): Promise<void>;
}

export async function startHookProxy(gatewayUrl: string): Promise<HookProxy> {
  let fail: { status: number; n: number } | undefined;
  const proxy: HookProxy = {
    url: '',
    batches: [],
    failNext(status, n) {
      fail = { status, n };
    },
    maxMessages: Infinity,
    delayMs: 0,
    runIdsById() {
      const out = new Map<string, Set<string>>();
      for (const b of proxy.batches) {
        if (b.status < 200 || b.status > 299 || !b.answer?.runIds) continue;
        b.ids.forEach((id, i) => {
          const set = out.get(id) ?? new Set<string>();
          set.add(b.answer.runIds[i]);
          out.set(id, set);
        });
      }
      return out;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const payload = JSON.parse(raw) as { messages: PostedBatch['messages'] };
        const batch: PostedBatch = { ids: payload.messages.map((m) => m.id), messages: payload.messages, status: 0 };
        if (proxy.delayMs) await new Promise((r) => setTimeout(r, proxy.delayMs));
        if (fail && fail.n > 0) {
          fail.n--;
          batch.status = fail.status;
        } else if (payload.messages.length > proxy.maxMessages) {
          batch.status = 413;
        }
        if (batch.status) {
          proxy.batches.push(batch);
          res.writeHead(batch.status, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ ok: false, error: 'scripted by the test', code: 'scripted' }));
          return;
        }
        const r = await fetch(gatewayUrl + req.url, {
          method: 'POST',
          headers: { authorization: req.headers.authorization ?? '', 'content-type': 'application/json' },
          body: raw,
        });
        const text = await r.text();
        batch.status = r.status;
        batch.answer = text ? JSON.parse(text) : undefined;
        proxy.batches.push(batch);
        res.writeHead(r.status, { 'content-type': 'application/json' });
        res.end(text);
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return proxy;
}

export interface RunProcess {
  child: ChildProcess;
  output(): string;
  /** Resolves with the first match of re in the output. */
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** `hookgate webhooks gmail <args>` as a process of its own (env: HOOKGATE_GOOGLE_API_ROOT set by the caller). */
export function spawnGmail(args: string[]): RunProcess {
  const { child, output, exited } = spawnCapturing(process.execPath, [...SOURCE_CLI, 'webhooks', 'gmail', ...args]);
  return {
    child,
    output,
    async waitFor(re, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const m = re.exec(output());
        if (m) return m;
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${re} in:\n${output()}`);
        if (child.exitCode !== null) throw new Error(`exited (${child.exitCode}) before ${re}:\n${output()}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exitWithin(child, exited, EXIT_BOUND_MS, 'gmail watcher');
    },
  };
}

/** Runs `hookgate <args>` to its end (killed, and the promise rejects, past EXIT_BOUND_MS). */
export async function runCli(args: string[]): Promise<{ code: number | null; out: string }> {
  const { child, output, exited } = spawnCapturing(process.execPath, [...SOURCE_CLI, ...args]);
  const code = await exitWithin(child, exited, EXIT_BOUND_MS, `hookgate ${args[0] ?? ''}`);
  return { code, out: output() };
}

/** Runs `hookgate webhooks gmail <args>` to its end. */
export async function runGmail(args: string[]): Promise<{ code: number | null; out: string }> {
  return runCli(['webhooks', 'gmail', ...args]);
}

export async function writeJson(file: string, value: unknown): Promise<void> {
  await writeFile(file, JSON.stringify(value, null, 2));
}
