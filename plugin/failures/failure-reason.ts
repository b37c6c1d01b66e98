// Why a run or delivery failed, as it may be shown (the failure list, the main session's event): one
// line, short, with what looks like a credential masked and the content markers neutralised. Hosts
// redact their own secrets before they report; this catches what a provider or platform echoes back.
import { sanitizeMarkers } from '../safety/index.ts';
import { oneLine, truncate } from '../util/text.ts';

const REASON_MAX = 300;

/** What looks like a credential, and what it becomes. */
const MASKS: readonly [RegExp, string][] = [
  // Authorization schemes and their values.
  [/\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}/gi, '$1 [redacted]'],
  // key=value and "key": "value" pairs whose name says secret.
  [
    /\b([\w-]*(?:token|secret|password|passwd|api[_-]?key|signature|sig)[\w-]*)(["']?\s*[:=]\s*["']?)[^\s"'&,;)\]}]+/gi,
    '$1$2[redacted]',
  ],
  // Credentials in URLs.
  [/(\/\/)[^/\s:@]+:[^/\s@]+@/g, '$1[redacted]@'],
  // Provider-style keys (sk-…, xoxb-…, ghp_…) and long opaque strings.
  [/\b(?:sk|pk|rk|xox[abpr]|gh[pousr])[-_][A-Za-z0-9_-]{8,}/g, '[redacted]'],
  [/[A-Za-z0-9+_-]{40,}={0,2}/g, '[redacted]'],
];

/** One line of at most 300 characters, credentials masked, markers neutralised. */
export function failureReason(text: string): string {
  let line = oneLine(text.length > REASON_MAX * 4 ? text.slice(0, REASON_MAX * 4) : text);
  for (const [pattern, mask] of MASKS) line = line.replace(pattern, mask);
  return sanitizeMarkers(truncate(line, REASON_MAX)) || 'unknown error';
}
