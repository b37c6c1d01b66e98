// What every CLI command shares: the error that means "wrong usage" (exit 2, usage-error.ts). A host
// that only answers what loading a config asks is checkingHost (server/settings.ts); where the config
// and state live: state-paths.ts.
export { UsageError } from './usage-error.ts';
