// A load step that runs once: callers during the load share it, a success is kept, a failure can be
// retried by the next caller.
export class LoadOnce {
  private pending: Promise<void> | undefined;
  private loaded = false;

  constructor(private readonly load: () => Promise<void>) {}

  get done(): boolean {
    return this.loaded;
  }

  run(): Promise<void> {
    this.pending ??= this.load().then(
      () => {
        this.loaded = true;
      },
      (err: unknown) => {
        this.pending = undefined;
        throw err;
      },
    );
    return this.pending;
  }
}
