// The admin API's requests as the core's routes see them, whichever host serves them (the standalone
// under /api/, OpenClaw under /hookgate/api/): the host authenticates the caller first.

export interface AdminCall {
  method: string;
  /** The path after the API's prefix, split at "/" and percent-decoded. */
  parts: readonly string[];
  query: URLSearchParams;
  /** The JSON body (undefined when empty); a body that is not JSON is a 400. */
  body(): Promise<unknown>;
}

/** Answers a call it owns (the JSON body of a 200, an AdminAnswer, or throws a HookError); undefined: not its path. */
export type AdminRoute = (call: AdminCall) => Promise<unknown> | undefined;

/** An answer whose status is not 200 (a replay's 202 Accepted). */
export class AdminAnswer {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {}
}

/** Data serialized as one line of JSON (or a way to, called only if it is sent): sent as it is. */
export class JsonText {
  constructor(readonly made: string | (() => string)) {}

  get text(): string {
    return typeof this.made === 'string' ? this.made : this.made();
  }
}

/**
 * Sends one server-sent event (data serialized as JSON, or a JsonText as it is); false when the
 * client is too far behind and was dropped.
 */
export type SendEvent = (event: string, data: unknown) => boolean;

/**
 * An answer that stays open (`text/event-stream`): `open` starts it with a way to send events and
 * returns what stops it, called once when the client goes. admin-stream.ts serves it for every host.
 */
export class AdminStream {
  constructor(readonly open: (send: SendEvent) => () => void) {}
}
