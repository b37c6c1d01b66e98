// Hands work from the HTTP route to the registered service. A plugin-auth route runs without the
// operator scope that api.runtime.subagent needs; the service has it. Tasks submitted from the route
// run in the async context captured when the service started, and wait while no service is running.

/** Runs a function in the context the service captured (AsyncLocalStorage.snapshot()). */
export type ContextRunner = <R>(fn: () => R) => R;

interface Waiting {
  task: () => Promise<unknown>;
  resolve(value: unknown): void;
  reject(err: unknown): void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

export class ServiceQueue {
  private runner: ContextRunner | undefined;
  private readonly waiting: Waiting[] = [];

  /** Called by the service when it starts; work that waited runs now. */
  attach(runner: ContextRunner): void {
    this.runner = runner;
    for (const w of this.waiting.splice(0)) this.launch(w);
  }

  /** Called by the service when it stops; later work waits for the next start. */
  detach(): void {
    this.runner = undefined;
  }

  /** Refuses everything still waiting (the plugin is going away). */
  clear(reason: string): void {
    for (const w of this.waiting.splice(0)) {
      if (w.onAbort) w.signal?.removeEventListener('abort', w.onAbort);
      w.reject(new Error(reason));
    }
  }

  /** Runs task in the service's context; a task aborted while waiting never runs. */
  run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) return Promise.reject(new Error(`aborted: ${String(signal.reason)}`));
    return new Promise<T>((resolve, reject) => {
      const w: Waiting = { task, resolve: resolve as (v: unknown) => void, reject, signal };
      if (this.runner) {
        this.launch(w);
        return;
      }
      if (signal) {
        w.onAbort = () => {
          const i = this.waiting.indexOf(w);
          if (i !== -1) this.waiting.splice(i, 1);
          reject(new Error(`aborted: ${String(signal.reason)}`));
        };
        signal.addEventListener('abort', w.onAbort, { once: true });
      }
      this.waiting.push(w);
    });
  }

  private launch(w: Waiting): void {
    if (w.onAbort) w.signal?.removeEventListener('abort', w.onAbort);
    const runner = this.runner!;
    let p: Promise<unknown>;
    try {
      p = runner(w.task);
    } catch (err) {
      w.reject(err);
      return;
    }
    p.then(w.resolve, w.reject);
  }
}
