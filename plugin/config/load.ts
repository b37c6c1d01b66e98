// Reads the gateway's JSON5 config file; syntax errors name the file, line and column.
import { readFile } from 'node:fs/promises';
import JSON5 from 'json5';
import { ConfigError } from '../errors.ts';

export async function readConfigFile(file: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError([code === 'ENOENT' ? 'file not found' : `cannot read: ${code ?? String(err)}`], file);
  }
  return parseConfigText(text, file);
}

function parseConfigText(text: string, file: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON5.parse(text);
  } catch (err) {
    const e = err as SyntaxError & { lineNumber?: number; columnNumber?: number };
    const where = e.lineNumber ? `line ${e.lineNumber}, column ${e.columnNumber ?? 0}: ` : '';
    throw new ConfigError([`JSON5 syntax error at ${where}${e.message.replace(/^JSON5: /, '')}`], file);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ConfigError(['the file must hold one JSON5 object'], file);
  }
  return value as Record<string, unknown>;
}
