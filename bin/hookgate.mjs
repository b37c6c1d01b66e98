#!/usr/bin/env -S node --max-semi-space-size=8
// Installed entry point: the CLI as built by `npm run build` (run by npm install through `prepare`).
// The flag (also in `npm start`) caps V8's young generation at 8 MB per semi-space instead of 16,
// which keeps resident memory lower under load (docs/performance.md).
await import('../dist/plugin/hosts/standalone/cli.js');
