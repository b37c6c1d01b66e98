// What the storage unit tests share: a logger that records its lines, a temp dir per test, a file's
// lines, and the sizes the bounds tests use.
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { LogFields, Logger } from '../../plugin/host.ts';

interface LogLine {
  level: 'info' | 'warn' | 'error';
  msg: string;
  fields?: LogFields;
}

export function recordingLogger(): Logger & { lines: LogLine[]; warnings(): string[] } {
  const lines: LogLine[] = [];
  return {
    lines,
    info: (msg, fields) => void lines.push({ level: 'info', msg, fields }),
    warn: (msg, fields) => void lines.push({ level: 'warn', msg, fields }),
    error: (msg, fields) => void lines.push({ level: 'error', msg, fields }),
    warnings: () => lines.filter((l) => l.level === 'warn').map((l) => l.msg),
  };
}

export async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hookgate-store-'));
  try {
    await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function fileLines(file: string): Promise<string[]> {
  const text = await readFile(file, 'utf8');
  assert.ok(text.endsWith('\n'), 'file ends with a newline');
  return text.slice(0, -1).split('\n');
}

export interface Rec {
  n: number;
  s?: string;
}

export const KiB = 1024;
export const MiB = 1024 * KiB;
export const quiet: Logger = { info: () => {}, warn: () => {}, error: () => {} };
export const small = { segmentBytes: 64 * KiB, retainBytes: 256 * KiB };

export async function dirBytes(dir: string, prefix: string): Promise<{ files: string[]; bytes: number }> {
  const files = (await readdir(dir)).filter((f) => f.startsWith(prefix));
  let bytes = 0;
  for (const f of files) bytes += (await stat(path.join(dir, f))).size;
  return { files, bytes };
}
