// A real redis-server for one test file: its own free loopback port and temp dir, no persistence
// (or AOF with a sync per write when asked: a restart then keeps what it acknowledged).
// kill() and start() again on the same port stand for an outage and Redis coming back.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { tempDir } from './temp-dir.ts';

export interface RedisServer {
  port: number;
  url: string;
  /** The running server's process id (for CPU figures). */
  readonly pid: number | undefined;
  /** Starts it again (after kill()) on the same port. */
  start(): Promise<void>;
  /** SIGKILL: an outage, connections cut at once. */
  kill(): Promise<void>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** password: the server requires it (requirepass), and `url` carries it. aof: appendonly, fsync always. */
export async function startRedis(opts: { password?: string; aof?: boolean } = {}): Promise<RedisServer> {
  const dir = await tempDir('hookgate-redis-');
  const port = await freePort();
  let child: ChildProcess | undefined;

  const start = async (): Promise<void> => {
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', ''];
    args.push(...(opts.aof ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']));
    // DEBUG SLEEP stands for a Redis that hangs.
    args.push('--enable-debug-command', 'local');
    if (opts.password) args.push('--requirepass', opts.password);
    const proc = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    let out = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        proc.kill('SIGKILL');
        reject(new Error(`redis-server did not start within 60 s; killed:\n${out}`));
      }, 60_000);
      const onData = (d: Buffer): void => {
        out += d.toString();
        if (out.includes('Ready to accept connections')) {
          clearTimeout(timer);
          proc.stdout!.off('data', onData);
          proc.stdout!.resume();
          resolve();
        }
      };
      proc.stdout!.on('data', onData);
      proc.stderr!.on('data', (d: Buffer) => (out += d.toString()));
      proc.once('error', (err) => reject(new Error(`redis-server could not run (is it installed?): ${err.message}`)));
      proc.once('exit', (code) => reject(new Error(`redis-server exited with ${code}:\n${out}`)));
    });
  };

  const end = async (signal: NodeJS.Signals): Promise<void> => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    proc.kill(signal);
    // A server that ignores the stop is killed: a test waits for a bound, never for ever.
    const timer = setTimeout(() => proc.kill('SIGKILL'), 60_000);
    await exited;
    clearTimeout(timer);
  };

  await start();
  process.once('exit', () => child?.kill('SIGKILL'));
  return {
    port,
    get pid() {
      return child?.pid;
    },
    url: `redis://${opts.password ? `:${opts.password}@` : ''}127.0.0.1:${port}`,
    start,
    kill: () => end('SIGKILL'),
    stop: () => end('SIGTERM'),
  };
}
