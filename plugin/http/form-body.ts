// application/x-www-form-urlencoded bodies (Slack slash commands and interactivity, Twilio, GitHub's
// form option): fields become strings, repeated fields arrays. A form whose only field is `payload`
// holding a JSON object is that object, so templates and transforms see it as a JSON delivery.
import { refuse } from '../errors.ts';

export function parseFormObject(body: Buffer): Record<string, unknown> {
  const fields = new Map<string, string | string[]>();
  for (const [name, value] of new URLSearchParams(body.toString('utf8'))) {
    const had = fields.get(name);
    fields.set(name, had === undefined ? value : Array.isArray(had) ? [...had, value] : [had, value]);
  }
  if (fields.size === 0) throw refuse.invalidJson('the body is an empty form');
  const payload = fields.get('payload');
  if (fields.size === 1 && typeof payload === 'string') {
    let value: unknown;
    try {
      value = JSON.parse(payload);
    } catch {
      throw refuse.invalidJson('the form field "payload" is not valid JSON');
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw refuse.invalidJson('the form field "payload" must hold a JSON object');
    }
    return value as Record<string, unknown>;
  }
  // fromEntries defines own properties, so a field named __proto__ is only a field.
  return Object.fromEntries(fields);
}
