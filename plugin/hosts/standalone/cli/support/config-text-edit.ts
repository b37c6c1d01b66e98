// The frame of a command that edits a JSON5 config as text: parse it, apply the edit, and accept the
// result only if it reads back as exactly the intended value, so a config that no longer loads (or
// says something else) is never written. A file that was strict JSON is written as strict JSON.
import { isDeepStrictEqual } from 'node:util';
import JSON5 from 'json5';
import { ConfigError } from '../../../../host-kit.ts';
import { isObject, isStrictJson, Json5EditError, toStrictJson, type JsonObject } from './json5-edit.ts';

export function parseConfigText(text: string, configPath: string): JsonObject {
  let file: unknown;
  try {
    file = JSON5.parse(text);
  } catch (err) {
    throw new ConfigError([`the file is not valid JSON5 (${(err as Error).message})`], configPath);
  }
  if (!isObject(file)) throw new ConfigError(['the file must hold one JSON5 object'], configPath);
  return file;
}

/**
 * `edit()`'s text when it reads back as `wanted`; else a ConfigError telling what to do by hand. A file
 * that was strict JSON (`original`) stays strict JSON, so `jq` and JSON.parse still read it.
 */
export function checkedEdit(
  original: string,
  wanted: JsonObject,
  edit: () => string,
  byHand: string,
  configPath: string,
): string {
  let out: string | undefined;
  try {
    out = edit();
    if (isStrictJson(original)) out = toStrictJson(out);
  } catch (err) {
    if (!(err instanceof Json5EditError)) throw err;
    out = undefined;
  }
  let readBack: unknown;
  try {
    readBack = out === undefined ? undefined : JSON5.parse(out);
  } catch {
    readBack = undefined;
  }
  if (out === undefined || !isDeepStrictEqual(readBack, wanted))
    throw new ConfigError([`could not edit the file keeping its layout; ${byHand}`], configPath);
  return out;
}
