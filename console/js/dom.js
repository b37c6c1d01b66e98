// Builds the page's elements. Every string given as a child becomes a text node and every attribute
// is set as an attribute, so a sender's string (a path, a key, an error text, a reply) is shown as
// text and never read as markup: nothing in the console uses innerHTML.

/** h('a', { href: '#/runs' }, 'Runs'): an element with attributes, listeners (onclick…) and children. */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') el.addEventListener(name.slice(2), value);
    else if (name === 'value' || name === 'checked') el[name] = value;
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  add(el, children);
  return el;
}

/** Appends children: nodes as they are, anything else as text; arrays flattened, empty ones skipped. */
export function add(el, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/** Replaces an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  return add(el, children);
}

const two = (n) => String(n).padStart(2, '0');

/**
 * A time (an ISO string or ms) as the owner reads it, local to the second: 2026-11-28 14:03:09;
 * empty when there is none.
 * Built from the date's own fields, not toLocaleString: a page's first Intl date format loads the
 * locale's data, the largest single cost of the first view (docs/performance.md).
 */
export function when(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  const day = `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}`;
  return `${day} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

/** A table with a caption (what a screen reader announces), a header row and one row per item. */
export function table(caption, headings, rows) {
  return h(
    'table',
    null,
    h('caption', null, caption),
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        headings.map((name) => h('th', { scope: 'col' }, name)),
      ),
    ),
    h('tbody', null, rows),
  );
}

/** A definition list of [term, value] pairs, skipping those without a value. */
export function facts(pairs) {
  return h(
    'dl',
    { class: 'facts' },
    pairs
      .filter(([, value]) => value !== undefined && value !== null && value !== '')
      .map(([term, value]) => [h('dt', null, term), h('dd', null, value)]),
  );
}

/** An id and its field as a label and an input, the label naming it for screen readers. */
export function field(id, label, input) {
  input.id = id;
  return h('p', { class: 'field' }, h('label', { for: id }, label), input);
}

/** Tells the owner what an action did, in the status line screen readers announce. */
export function say(text) {
  document.getElementById('status').textContent = text;
}
