// application/x-www-form-urlencoded bodies (Slack slash commands and interactivity, Twilio, GitHub's
// form option): fields become strings, repeated fields arrays. A form whose only field is `payload`
// holding a JSON object is that object, so templates and transforms see it as a JSON delivery.
import { refuse } from '../errors.ts';

/** Real senders send a few dozen fields; more is refused before anything is decoded. */
export const MAX_FORM_FIELDS = 1000;
const AMPERSAND = 0x26;

export function parseFormObject(body: Buffer): Record<string, unknown> {
  if (fieldsIn(body) > MAX_FORM_FIELDS) {
    throw refuse.invalidBody(`the form has more than ${MAX_FORM_FIELDS} fields`);
  }
  const fields = new Map<string, string | string[]>();
  for (const [name, value] of new URLSearchParams(body.toString('utf8'))) {
    const had = fields.get(name);
    // A repeat appends in place: copying the array on every repeat made a body of repeats quadratic.
    if (had === undefined) fields.set(name, value);
    else if (Array.isArray(had)) had.push(value);
    else fields.set(name, [had, value]);
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

/** Non-empty `&`-separated pieces, counted over the bytes (URLSearchParams skips the empty ones too). */
function fieldsIn(body: Buffer): number {
  let fields = 0;
  let start = 0;
  for (let i = body.indexOf(AMPERSAND); i !== -1; i = body.indexOf(AMPERSAND, start)) {
    if (i > start) fields++;
    start = i + 1;
  }
  return start < body.length ? fields + 1 : fields;
}
