// A reply not yet settled, as the reply queue keeps it on disk: the delivery, its hook, and its state
// so far (failed tries, the next one's time, the parts of a split reply already sent). The standalone
// gateway's records from before the queue moved into the core have the same shape without `hook`;
// OpenClaw's old records (a delivery waiting for its next try) are read and converted.
import type { ChannelName, Delivery, ReplyAttempt, ReplyEntry, Route } from '../host.ts';

export interface ReplyRecord {
  id: string;
  channel: ChannelName;
  to?: string;
  text: string;
  runId: string;
  agentId: string;
  /** The hook whose run produced the reply; absent on records kept before it was. */
  hook?: string;
  /** The endpoint or mapping id that accepted that run (the failure book's fair share). */
  hookId?: string;
  /** When the reply was queued. */
  at: string;
  status: 'pending' | 'retrying';
  attempts?: ReplyAttempt[];
  nextAttemptAt?: string;
  partsSent?: number;
  messageIds?: string[];
  /** Where the reply goes next if this delivery fails for good, in order. */
  fallbacks?: Route[];
  /** The delivery this one replaces: it failed for good, and this channel came next. */
  fallbackOf?: string;
}

const isText = (v: unknown): v is string => typeof v === 'string';
const isOptionalText = (v: unknown): boolean => v === undefined || typeof v === 'string';

function isReplyRecord(value: unknown): value is ReplyRecord {
  const v = value as Partial<Record<keyof ReplyRecord, unknown>> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    isText(v.id) &&
    isText(v.channel) &&
    isOptionalText(v.to) &&
    isText(v.text) &&
    isText(v.runId) &&
    isText(v.agentId) &&
    isOptionalText(v.hook) &&
    isOptionalText(v.hookId) &&
    isText(v.at) &&
    (v.status === 'pending' || v.status === 'retrying')
  );
}

/** OpenClaw's record of a delivery waiting for its next try, before the queue moved into the core. */
interface WaitingDelivery {
  delivery: Delivery;
  hook: string;
  tries: number;
  firstAt: string;
  lastError: string;
  nextAt: number;
}

function isWaitingDelivery(value: unknown): value is WaitingDelivery {
  const v = value as Partial<WaitingDelivery> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.tries === 'number' &&
    isText(v.hook) &&
    typeof v.nextAt === 'number' &&
    isText(v.firstAt) &&
    isText(v.lastError) &&
    isText(v.delivery?.runId) &&
    isText(v.delivery.channel) &&
    isText(v.delivery.text)
  );
}

/** A kept record in today's shape, or undefined for a line that is neither shape. */
export function replyRecordOf(value: unknown, id: string): ReplyRecord | undefined {
  if (isReplyRecord(value)) return value;
  if (!isWaitingDelivery(value)) return undefined;
  const { delivery: d, hook, tries, firstAt, lastError, nextAt } = value;
  const nextAttemptAt = new Date(nextAt);
  return {
    id,
    channel: d.channel,
    ...(d.to !== undefined ? { to: d.to } : {}),
    text: d.text,
    runId: d.runId,
    agentId: d.agentId,
    hook,
    at: firstAt,
    status: 'retrying',
    attempts: Array.from({ length: Math.max(1, tries) }, () => ({ at: firstAt, error: lastError })),
    ...(Number.isNaN(nextAttemptAt.getTime()) ? {} : { nextAttemptAt: nextAttemptAt.toISOString() }),
  };
}

/** Either shape a state file may hold. */
export function isKeptReply(value: unknown): value is ReplyRecord | WaitingDelivery {
  return isReplyRecord(value) || isWaitingDelivery(value);
}

/** The delivery a try sends: exactly the host's Delivery, nothing of the queue's own fields. */
export function deliveryOf(r: ReplyRecord): Delivery {
  return {
    channel: r.channel,
    ...(r.to !== undefined ? { to: r.to } : {}),
    text: r.text,
    runId: r.runId,
    agentId: r.agentId,
  };
}

/** The record as the history first saw it. */
export function entryOf(r: ReplyRecord): ReplyEntry & { id: string } {
  return {
    id: r.id,
    ...deliveryOf(r),
    at: r.at,
    status: 'pending',
    ...(r.fallbackOf !== undefined ? { fallbackOf: r.fallbackOf } : {}),
  };
}
