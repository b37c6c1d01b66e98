// The transform sandbox: user transform modules run in a pool of worker threads (README.md beside this
// file). This is the folder's one entry; nothing else in it is imported from outside.
export { TransformRunner } from './runner.ts';
export type { TransformCall, TransformEvents, TransformOutcome, TransformRunnerOptions, WorkerView } from './runner.ts';
export { confineDir, confineModule } from './confine.ts';
