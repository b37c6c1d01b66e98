// One try at a reply through OpenClaw's channel outbound adapter, in the service's context, as the
// core's reply queue asks for it (plugin/replies/): the first try is made before the run ends, so a
// refusal there is the run's error; a failure OpenClaw's channel reports as passing (network, 429,
// 5xx; a platform's announced wait) is the queue's to try again. The adapter takes no abort signal:
// a stop stops waiting for it, and the reply stays queued for the next start.
import type { HostReplies, SendResult } from '../../host.ts';
import { errorMessage } from '../../util/errors.ts';
import type { OpenClawPluginApi } from './api.ts';
import { classifyDeliveryError } from './passing-failure.ts';
import type { ServiceQueue } from './run-queue.ts';
import { deliverReply } from './turns.ts';

/** Credentials a channel library may quote in an error: bot tokens, Slack tokens, auth headers, URLs' paths. */
const CREDENTIALS: readonly [RegExp, string][] = [
  [/\b\d{5,}:[A-Za-z0-9_-]{20,}/g, '[redacted]'],
  [/\bxox[a-z]-[A-Za-z0-9-]+/g, '[redacted]'],
  [/\b(Bearer|Bot|Basic)\s+\S+/gi, '$1 [redacted]'],
  [/\b(https?:\/\/[^/\s]+)\/\S*/gi, '$1/…'],
];

/** One reason line, without the platform's echo of what was sent or a credential it quoted. */
export function reasonOf(err: unknown): string {
  let line = errorMessage(err).split('\n', 1)[0]!;
  for (const [pattern, replacement] of CREDENTIALS) line = line.replace(pattern, replacement);
  return line.slice(0, 300);
}

const failed = (retryable: boolean, description: string, waitMs?: number): SendResult => ({
  status: 'failed',
  retryable,
  description,
  ...(waitMs !== undefined ? { waitMs } : {}),
  sentParts: 0,
  messageIds: [],
});

export function openClawReplies(api: OpenClawPluginApi, queue: ServiceQueue, config: () => unknown): HostReplies {
  return {
    firstTryInRun: true,
    async send(delivery, { signal }) {
      let stop: (() => void) | undefined;
      const stopped = new Promise<'stopped'>((resolve) => {
        stop = () => resolve('stopped');
        signal.addEventListener('abort', stop, { once: true });
      });
      try {
        const sent = queue.run(() => deliverReply(api.runtime, config(), delivery), signal);
        if ((await Promise.race([sent, stopped])) === 'stopped') {
          sent.catch(() => {});
          return failed(true, 'interrupted: hookgate stopped before the channel answered');
        }
        return { status: 'sent', messageIds: [] };
      } catch (err) {
        if (signal.aborted) return failed(true, 'interrupted: hookgate stopped before the channel answered');
        const passing = classifyDeliveryError(err);
        return failed(passing.retryable, reasonOf(err), passing.retryAfterMs);
      } finally {
        signal.removeEventListener('abort', stop!);
      }
    },
  };
}
