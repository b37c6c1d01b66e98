// For config tools and CLIs: reading and checking a config file as the plugin does (the same
// schemas, defaults and secret rules), the dry run of `webhooks test`, and what a sender on this
// host posts to one of its hooks with, read from a loaded snapshot.
export { readConfigFile } from '../config/load.ts';
export { loadConfig } from '../config/load-snapshot.ts';
export { DEFAULTS } from '../settings/defaults.ts';
export { resolveHooksConfig, selectStandaloneConfig } from '../config/hooks-config.ts';
export { readSecretFile, resolveSecret } from '../settings/secret-values.ts';
export { compileSchema, formatErrors } from '../settings/schemas.ts';
export { dryRun, loadForDryRun, type DryRunResult } from '../dry-run.ts';
export { localPostOf, type LocalPost } from '../request/resolve.ts';
export { readPausedHooks } from '../pauses/pauses.ts';
export { readBudgetWindows } from '../budgets/budget-windows.ts';
export { TransformRunner } from '../transforms/index.ts';
export { unwrapExternalContent } from '../safety/index.ts';
export { PRESETS } from '../mappings/presets.ts';
