// One outbound HTTP exchange bounded in time from the request to the last byte of the answer, for
// every call to a peer (chat platforms, model providers, Google). fetch's own signal does not always
// reach the read of a body once the answer's headers are in: an AbortSignal.any whose timeout was
// garbage-collected never fires (Node issue 55428), and an abort landing between the transport's end
// and the stream's close leaves the read pending. Here the deadline is a timer this call holds, every
// read races it and the caller's signal, and a read that loses cancels the body, which closes the
// connection: a peer that stalls mid-body fails the exchange within its time, and a stop ends it.
import { timerDelay } from './time-bounds.ts';

/** The exchange took longer than its time: no answer (`headers`) or no whole body (`body`) by then. */
export class ExchangeTimeout extends Error {
  override readonly name = 'ExchangeTimeout';

  constructor(
    readonly ms: number,
    readonly phase: 'headers' | 'body',
  ) {
    super(phase === 'headers' ? `no answer within ${ms} ms` : `the answer's body stalled: not whole within ${ms} ms`);
  }
}

export interface ExchangeLimits {
  /** From the request to the answer's last byte. */
  timeoutMs: number;
  /** The caller's stop (a shutdown, a run's end): the exchange ends at once with its reason. */
  signal?: AbortSignal;
  /** Bytes of the body kept; the rest is not read (the answer says `truncated`). Default: all. */
  maxBytes?: number;
}

export interface BoundedAnswer {
  status: number;
  statusText: string;
  ok: boolean;
  headers: Headers;
  /** The body read, up to maxBytes. */
  body: Buffer;
  /** The body went on past maxBytes. */
  truncated: boolean;
  /** The connection failed mid-body: `body` is what came before (what to make of it is the caller's). */
  cut?: unknown;
}

/**
 * Sends the request and reads its answer whole within `timeoutMs`. Rejects with ExchangeTimeout at the
 * deadline, with the signal's reason when the caller stops it, and with fetch's own error when no
 * answer came (the network, a refused connection).
 */
export async function boundedFetch(
  url: string | URL,
  init: Omit<RequestInit, 'signal'>,
  limits: ExchangeLimits,
): Promise<BoundedAnswer> {
  const controller = new AbortController();
  let phase: 'headers' | 'body' = 'headers';
  let end!: (reason: unknown) => void;
  const ended = new Promise<never>((_, reject) => (end = reject));
  ended.catch(() => {});
  const stop = (reason: unknown): void => {
    controller.abort(reason);
    end(reason);
  };
  const timer = setTimeout(() => stop(new ExchangeTimeout(limits.timeoutMs, phase)), timerDelay(limits.timeoutMs));
  const { signal } = limits;
  const onAbort = (): void => stop(signal!.reason);
  if (signal?.aborted) onAbort();
  else signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const res = await Promise.race([fetch(url, { ...init, signal: controller.signal }), ended]).catch(
      (err: unknown) => {
        // fetch rejects with its own AbortError: the reason is what the caller is told.
        throw controller.signal.aborted ? controller.signal.reason : err;
      },
    );
    phase = 'body';
    const { body, truncated, cut } = await readWithin(res, ended, limits.maxBytes ?? Infinity, controller.signal);
    return {
      status: res.status,
      statusText: res.statusText,
      ok: res.ok,
      headers: res.headers,
      body,
      truncated,
      ...(cut !== undefined ? { cut } : {}),
    };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}

/** The body, each read racing the exchange's end; an unfinished body is cancelled (its connection closed). */
async function readWithin(
  res: Response,
  ended: Promise<never>,
  maxBytes: number,
  stopped: AbortSignal,
): Promise<{ body: Buffer; truncated: boolean; cut?: unknown }> {
  if (!res.body) return { body: Buffer.alloc(0), truncated: false };
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), ended]);
      if (done) {
        finished = true;
        return { body: Buffer.concat(chunks), truncated: false };
      }
      chunks.push(value);
      bytes += value.byteLength;
      if (bytes > maxBytes) return { body: Buffer.concat(chunks).subarray(0, maxBytes), truncated: true };
    }
  } catch (err) {
    if (stopped.aborted) throw stopped.reason;
    return { body: Buffer.concat(chunks), truncated: false, cut: err };
  } finally {
    // Not awaited: a stalled stream's cancel may itself wait on the peer.
    if (!finished) reader.cancel().catch(() => {});
  }
}
