// Lint rules chosen for what has bitten this code: promises left floating, non-errors thrown, import
// cycles, and the core reaching into a host. Formatting is Prettier's job (npm run format).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import { FLOORS } from './floors.js';

// The core's floors as lint zones: each room may import only the rooms on lower floors. A zone per room
// forbids every other room on its own floor or above; `import type` is an import like any other here.
const roomPath = (room) => `./plugin/${room.replace(/\/$/, '')}`;
const floorZones = FLOORS.flatMap((rooms, i) => {
  const below = FLOORS.slice(0, i).flat();
  const allowed =
    i === 0
      ? 'imports no other room of the core'
      : `may import only floor${i === 1 ? ' 1' : `s 1-${i}`}: ${below.join(', ')}`;
  return rooms.map((room) => ({
    target: roomPath(room),
    from: FLOORS.slice(i)
      .flat()
      .filter((other) => other !== room)
      .map(roomPath),
    message: `\`${room}\` (floor ${i + 1}) ${allowed} (the floors: floors.js, docs/reference/architecture.md)`,
  }));
}).filter((zone) => zone.from.length > 0);

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'bench/results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { 'import-x': importX },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] },
          ],
        },
      ],
      '@typescript-eslint/only-throw-error': 'error',
      '@typescript-eslint/prefer-promise-reject-errors': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      // Control characters are matched on purpose here: to escape, strip or refuse them.
      'no-control-regex': 'off',
      'no-empty': ['error', { allowEmptyCatch: true }],
      'no-constant-condition': ['error', { checkLoops: false }],
      // A variable a closure reads before it is assigned (once) is a let on purpose.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    // Product lines (docs: the layout). The core is plugin/ without its hosts; gmail/ and channels/ are
    // siblings that only the standalone host uses. Each line reaches another through its door only.
    // Within the core, the floors (floorZones above); one rule entry, since a second would replace it.
    files: ['plugin/**/*.ts', 'gmail/**/*.ts', 'channels/**/*.ts'],
    rules: {
      'import-x/no-restricted-paths': [
        'error',
        {
          basePath: import.meta.dirname,
          zones: [
            {
              target: ['./plugin/*.ts', './plugin/!(hosts)/**'],
              from: ['./plugin/hosts', './gmail', './channels'],
              message: 'the core never imports a host, gmail/ or channels/',
            },
            {
              target: ['./gmail', './channels'],
              from: './plugin',
              except: ['./host-kit.ts', './host.ts', './kits', './util'],
              message: 'gmail/ and channels/ reach the core through plugin/host-kit.ts and plugin/kits/ only',
            },
            {
              target: './gmail',
              from: './channels',
              message: 'gmail/ and channels/ are separate product lines',
            },
            {
              target: './channels',
              from: './gmail',
              message: 'gmail/ and channels/ are separate product lines',
            },
            {
              target: './plugin/hosts',
              from: './plugin',
              except: ['./hosts', './host-kit.ts', './host.ts', './kits', './util'],
              message:
                'a host uses the core through plugin/host-kit.ts, the host contract plugin/host.ts, plugin/kits/ and plugin/util/ only',
            },
            {
              target: './plugin/hosts',
              from: ['./gmail', './channels'],
              except: ['./index.ts'],
              message: 'a host uses gmail/ and channels/ through their index.ts only',
            },
            {
              // Storage is a sealed package: the rest of the standalone host sees its index.ts only.
              target: ['./plugin/hosts/openclaw/**', './plugin/hosts/standalone/!(storage)/**'],
              from: './plugin/hosts/standalone/storage',
              except: ['./index.ts'],
              message: 'the standalone host uses its storage through storage/index.ts only',
            },
            ...floorZones,
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.mjs'],
    languageOptions: {
      globals: Object.fromEntries(
        [
          'Buffer',
          'console',
          'process',
          'setTimeout',
          'clearTimeout',
          'setInterval',
          'clearInterval',
          'performance',
          'URL',
        ].map((name) => [name, 'readonly']),
      ),
    },
    rules: { 'no-control-regex': 'off' },
  },
  {
    // The console's page runs in the browser; a sender's string must never become markup there.
    files: ['console/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: Object.fromEntries(
        [
          'document',
          'window',
          'location',
          'fetch',
          'EventSource',
          'FormData',
          'URLSearchParams',
          'Node',
          'CSS',
          'performance',
          'console',
        ].map((name) => [name, 'readonly']),
      ),
    },
    rules: {
      'no-restricted-properties': [
        'error',
        ...['innerHTML', 'outerHTML', 'insertAdjacentHTML', 'write', 'writeln'].map((property) => ({
          property,
          message: 'the console builds elements with dom.js and sets text, never markup',
        })),
      ],
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts', 'test-openclaw/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
);
