#!/usr/bin/env node
// Installed entry point: the CLI as built by `npm run build` (run by npm install through `prepare`).
await import('../dist/plugin/cli.js');
