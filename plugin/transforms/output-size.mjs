// How big a transform's returned action is, measured in the worker before it is posted back: the bytes
// of its JSON text, counted without building that text. The walk stops as soon as the count passes the
// limit, so a value of any size (a 100-million-character string, a million keys, a cycle) costs no
// more than the limit to judge. Plain JavaScript: it runs in the worker on bare Node.

const hasOwn = (obj, key) => Object.prototype.hasOwnProperty.call(obj, key);

function isPlainObject(value) {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Characters that JSON escapes or UTF-8 writes in more than one byte. */
const NOT_PLAIN_ASCII = /[\u0000-\u001f"\\\u007f-\uffff]/;

/** Bytes of `text` as a JSON string (quotes and escapes included); only called on texts within the budget. */
function jsonStringBytes(text) {
  // Most texts are plain ASCII: one byte a character, no copy made to count them.
  if (!NOT_PLAIN_ASCII.test(text)) return text.length + 2;
  return Buffer.byteLength(JSON.stringify(text), 'utf8');
}

/**
 * 'ok' when `value` (a plain object) serialises as JSON in at most `limit` bytes; 'too-large' when it
 * takes more; 'not-data' when it holds something that is not JSON data (a function, a symbol, a bigint,
 * a class instance, a Map, a Date...). A getter that throws is the caller's to catch.
 */
export function checkOutput(value, limit) {
  let total = 0;
  const over = (bytes) => (total += bytes) > limit;
  const stack = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    switch (typeof v) {
      case 'string':
        // Every character takes at least one byte: a text longer than what is left is over, unread.
        if (v.length + 2 > limit - total || over(jsonStringBytes(v))) return 'too-large';
        continue;
      case 'number':
        if (over(Number.isFinite(v) ? String(v).length : 4)) return 'too-large';
        continue;
      case 'boolean':
        if (over(v ? 4 : 5)) return 'too-large';
        continue;
      case 'undefined':
        // Only array elements get here (object members holding undefined are skipped): JSON writes null.
        if (over(4)) return 'too-large';
        continue;
      case 'object':
        break;
      default:
        return 'not-data';
    }
    if (v === null) {
      if (over(4)) return 'too-large';
    } else if (Array.isArray(v)) {
      // Brackets and commas; each element adds at least one byte, so a huge or sparse array ends early.
      if (over(2 + Math.max(0, v.length - 1))) return 'too-large';
      for (let i = 0; i < v.length; i++) stack.push(hasOwn(v, i) ? v[i] : undefined);
    } else if (isPlainObject(v)) {
      let members = 0;
      if (over(2)) return 'too-large';
      for (const key of Object.keys(v)) {
        const member = v[key];
        if (member === undefined) continue;
        if (key.length + 3 > limit - total) return 'too-large';
        if (over(jsonStringBytes(key) + 1 + (members > 0 ? 1 : 0))) return 'too-large';
        members++;
        stack.push(member);
      }
    } else {
      return 'not-data';
    }
  }
  return 'ok';
}
