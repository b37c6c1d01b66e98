// The start-up warning when OpenClaw's built-in hooks are on and overlap the plugin's path.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { builtInHooksWarning } from '../../plugin/hosts/openclaw/builtin-hooks.ts';

test('built-in hooks on the same path, or one inside the other: a warning naming both paths', () => {
  assert.match(
    builtInHooksWarning({ hooks: { enabled: true, token: 't' } }, '/hooks') ?? '',
    /built-in hooks are enabled on \/hooks, which overlaps hookgate's \/hooks/,
  );
  assert.ok(builtInHooksWarning({ hooks: { enabled: true, path: 'hooks/' } }, '/hooks'));
  assert.ok(builtInHooksWarning({ hooks: { enabled: true, path: '/hooks/github' } }, '/hooks'));
  assert.ok(builtInHooksWarning({ hooks: { enabled: true, path: '/in' } }, '/in/hooks'));
  assert.match(builtInHooksWarning({ hooks: { enabled: true } }, '/hooks') ?? '', /hookgate openclaw import/);
});

test('built-in hooks off, absent or on another path: no warning', () => {
  assert.equal(builtInHooksWarning({}, '/hooks'), undefined);
  assert.equal(builtInHooksWarning({ hooks: { enabled: false, path: '/hooks' } }, '/hooks'), undefined);
  assert.equal(builtInHooksWarning({ hooks: { path: '/hooks' } }, '/hooks'), undefined);
  assert.equal(builtInHooksWarning({ hooks: { enabled: true, path: '/legacy' } }, '/hooks'), undefined);
  assert.equal(builtInHooksWarning({ hooks: { enabled: true, path: '/hooksx' } }, '/hooks'), undefined);
  assert.equal(builtInHooksWarning(undefined, '/hooks'), undefined);
});
