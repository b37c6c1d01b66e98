// Requests: the request log, newest first, filtered by hook, outcome, code, client and time, paged,
// with a live tail (server-sent events) while the view is open; and one request's detail (its
// phases, why it was refused, the runs it started, its key). Never a payload: the log has none.
import { h, fill, facts, field, table, when } from '../dom.js';
import { get, liveRequests, pathOf } from '../api.js';

const FILTERS = ['hook', 'outcome', 'code', 'client', 'since', 'until'];
const OUTCOMES = ['2xx', '4xx', '5xx', 'duplicate', 'held', 'ignored'];
/** Rows the live tail keeps: older ones are a page away (Newest, then Older). */
const LIVE_ROWS = 200;

export function outcomeOf(entry) {
  if (entry.duplicate) return 'duplicate';
  if (entry.held) return 'held';
  if (entry.ignored) return 'ignored';
  return `${Math.floor(entry.status / 100)}xx`;
}

function hookOf(entry) {
  return entry.hook ?? entry.mapping ?? entry.path;
}

function row(entry) {
  return h(
    'tr',
    { 'data-request': entry.requestId },
    h('td', null, when(entry.at)),
    h('td', null, hookOf(entry)),
    h('td', null, String(entry.status), entry.code ? ` ${entry.code}` : ''),
    h('td', null, outcomeOf(entry)),
    h('td', null, entry.client),
    h('td', null, entry.idempotencyKey ?? ''),
    h('td', null, h('a', { href: `#/requests/${pathOf(entry.requestId)}` }, entry.requestId)),
  );
}

/** A datetime-local field's value as an ISO time (the page's zone), and back. */
const toIso = (local) => (local ? new Date(local).toISOString() : '');
function toLocal(iso) {
  const date = new Date(iso);
  if (!iso || Number.isNaN(date.getTime())) return '';
  return new Date(date.getTime() - date.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}

function filterForm(query) {
  const input = (name, type = 'text') => h('input', { name, type, value: query.get(name) ?? '' });
  const outcome = h(
    'select',
    { name: 'outcome' },
    h('option', { value: '' }, 'any'),
    OUTCOMES.map((name) => h('option', { value: name, selected: query.get('outcome') === name }, name)),
  );
  const since = h('input', { name: 'since', type: 'datetime-local', value: toLocal(query.get('since')) });
  const until = h('input', { name: 'until', type: 'datetime-local', value: toLocal(query.get('until')) });
  const form = h(
    'form',
    { class: 'filters', 'aria-label': 'Filters' },
    field('filter-hook', 'Hook', input('hook')),
    field('filter-outcome', 'Outcome', outcome),
    field('filter-code', 'Code', input('code')),
    field('filter-client', 'Client', input('client')),
    field('filter-since', 'From', since),
    field('filter-until', 'To', until),
    h('button', { type: 'submit' }, 'Filter'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const next = new URLSearchParams();
    for (const name of FILTERS) {
      const value = String(data.get(name) ?? '').trim();
      if (value) next.set(name, name === 'since' || name === 'until' ? toIso(value) : value);
    }
    location.hash = `#/requests${String(next) ? `?${next}` : ''}`;
  });
  return form;
}

async function detail(main, id) {
  const { request } = await get(`requests/${pathOf(id)}`);
  const phases = request.phases ?? [];
  fill(
    main,
    h('h1', null, `Request ${request.requestId}`),
    facts([
      ['When', when(request.at)],
      ['Hook', hookOf(request)],
      ['Path', request.path],
      ['Client', request.client],
      ['Answer', `${request.status}${request.code ? ` ${request.code}` : ''}`],
      ['Outcome', outcomeOf(request)],
      ['Why refused', request.reason],
      ['Idempotency key', request.idempotencyKey],
      ['Dedupe key', request.dedupeKey],
      ['Duplicate', request.duplicate ? 'yes: answered as the first request was' : 'no'],
      ['Body bytes', String(request.bytes ?? 0)],
      ['Took', `${request.ms} ms`],
      [
        'Waited for its run',
        request.waited !== undefined ? `${request.waited} ms (${request.runStatus ?? ''})` : undefined,
      ],
    ]),
    phases.length
      ? table(
          'Phases',
          ['Phase', 'Milliseconds'],
          phases.map((p) => h('tr', null, h('td', null, p.name), h('td', null, String(p.ms)))),
        )
      : '',
    h('h2', null, 'Runs it started'),
    (request.runIds ?? []).length
      ? h(
          'ul',
          null,
          request.runIds.map((runId) => h('li', null, h('a', { href: `#/runs/${pathOf(runId)}` }, runId))),
        )
      : h('p', null, 'None.'),
    h('p', null, h('a', { href: '#/requests' }, 'All requests')),
  );
}

export async function render(main, route) {
  if (route.id !== undefined) return detail(main, route.id);
  const query = {};
  for (const name of FILTERS) if (route.query.get(name)) query[name] = route.query.get(name);
  const before = route.query.get('before') ?? undefined;
  const page = await get('requests', { ...query, limit: 50, before });
  const body = h('tbody');
  // The page is oldest first: the view shows newest first.
  for (const entry of [...page.requests].reverse()) body.append(row(entry));
  const older = new URLSearchParams({ ...query, ...(page.before ? { before: page.before } : {}) });
  const tableEl = table(
    'Requests, newest first',
    ['Time', 'Hook', 'Answer', 'Outcome', 'Client', 'Idempotency key', 'Request'],
    [],
  );
  tableEl.querySelector('tbody').replaceWith(body);
  const none = page.requests.length === 0 ? h('p', null, 'No requests match.') : '';
  const skippedNote = h('p', { class: 'live-skipped', role: 'status' });
  let skipped = 0;
  fill(
    main,
    h('h1', null, 'Requests'),
    filterForm(route.query),
    before === undefined
      ? h('p', { class: 'live' }, 'Live: new requests appear at the top as they arrive.')
      : h('p', null, h('a', { href: '#/requests' }, 'Newest')),
    skippedNote,
    tableEl,
    none,
    page.before ? h('p', null, h('a', { href: `#/requests?${older}` }, 'Older')) : '',
  );
  // The tail only on the newest page: an older page stays as it was.
  if (before !== undefined) return undefined;
  return liveRequests(
    query,
    (entry) => {
      if (body.querySelector(`tr[data-request="${CSS.escape(entry.requestId)}"]`)) return;
      body.prepend(row(entry));
      while (body.rows.length > LIVE_ROWS) body.lastElementChild.remove();
      // A request arrived: "none match" no longer holds.
      if (none) none.remove();
    },
    (count) => {
      skipped += count;
      skippedNote.textContent = `${skipped} more arrived too fast to show live; the list has them all (Newest).`;
    },
  );
}
