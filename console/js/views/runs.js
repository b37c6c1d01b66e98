// Runs: status, attempts, next attempt, reply disposition and delivery, newest first, paged; and a
// run's page with its attempts' errors, its reply's deliveries in order (a fallback names the one it
// replaces) and the reply text where the host keeps it.
import { h, fill, facts, field, table, when } from '../dom.js';
import { get, pathOf } from '../api.js';

const STATUSES = ['queued', 'running', 'retrying', 'ok', 'error', 'timeout'];

const attemptsOf = (run) => (Array.isArray(run.attempts) ? run.attempts.length : (run.attempts ?? 1));

/** A delivery (or several) as one line: channel, recipient, state. */
function deliveryText(delivery) {
  if (delivery === undefined || delivery === null) return '';
  if (typeof delivery === 'string') return delivery;
  const list = Array.isArray(delivery) ? delivery : [delivery];
  return list.map((d) => [d.channel, d.to, d.state ?? d.status].filter(Boolean).join(' ')).join('; ');
}

function dispositionText(reply) {
  if (reply === undefined || reply === null) return '';
  return typeof reply === 'string' ? reply : (reply.disposition ?? reply.kind ?? JSON.stringify(reply));
}

async function detail(main, id) {
  const run = await get(`runs/${pathOf(id)}`);
  const attempts = Array.isArray(run.attempts) ? run.attempts : [];
  const replyText = typeof run.reply === 'string' ? run.reply : (run.replyText ?? run.reply?.text);
  fill(
    main,
    h('h1', null, `Run ${run.runId ?? id}`),
    facts([
      ['Hook', run.hook ?? run.name],
      ['Status', run.status],
      ['Agent', run.agentId],
      ['Session', run.sessionKey],
      ['Error', run.error],
      ['Next attempt', when(run.nextAttemptAt)],
      ['Delivery', deliveryText(run.delivery)],
      ['Request', run.requestId ? h('a', { href: `#/requests/${pathOf(run.requestId)}` }, run.requestId) : undefined],
    ]),
    attempts.length
      ? table(
          'Attempts',
          ['Attempt', 'Started', 'Outcome', 'Error'],
          attempts.map((a, i) =>
            h(
              'tr',
              null,
              h('td', null, String(i + 1)),
              h('td', null, when(a.at ?? a.startedAt)),
              h('td', null, a.status ?? ''),
              h('td', null, a.error ?? ''),
            ),
          ),
        )
      : '',
    Array.isArray(run.deliveries) && run.deliveries.length
      ? table(
          'Deliveries',
          ['Channel', 'To', 'State', 'Instead of', 'Error'],
          run.deliveries.map((d) =>
            h(
              'tr',
              null,
              h('td', null, d.channel ?? ''),
              h('td', null, d.to ?? ''),
              h('td', null, d.status ?? ''),
              h('td', null, d.fallbackOf ?? ''),
              h('td', null, d.error ?? ''),
            ),
          ),
        )
      : '',
    h('h2', null, 'Reply'),
    replyText ? h('pre', { class: 'reply' }, replyText) : h('p', null, 'No reply text is kept for this run.'),
    h('p', null, h('a', { href: '#/runs' }, 'All runs')),
  );
}

function filterForm(query) {
  const status = h(
    'select',
    { name: 'status' },
    h('option', { value: '' }, 'any'),
    STATUSES.map((name) => h('option', { value: name, selected: query.get('status') === name }, name)),
  );
  const form = h(
    'form',
    { class: 'filters', 'aria-label': 'Filters' },
    field('runs-hook', 'Hook', h('input', { name: 'hook', value: query.get('hook') ?? '' })),
    field('runs-status', 'Status', status),
    h('button', { type: 'submit' }, 'Filter'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [name, value] of new FormData(form)) if (String(value).trim()) next.set(name, String(value).trim());
    location.hash = `#/runs${String(next) ? `?${next}` : ''}`;
  });
  return form;
}

export async function render(main, route) {
  if (route.id !== undefined) return detail(main, route.id);
  const query = { hook: route.query.get('hook') ?? undefined, status: route.query.get('status') ?? undefined };
  const page = await get('runs', { ...query, limit: 50, before: route.query.get('before') ?? undefined });
  const older = new URLSearchParams(Object.entries({ ...query, before: page.before }).filter(([, v]) => v));
  fill(
    main,
    h('h1', null, 'Runs'),
    filterForm(route.query),
    table(
      'Runs, newest first',
      ['Run', 'Hook', 'Status', 'Attempts', 'Next attempt', 'Reply', 'Delivery', 'Started'],
      [...page.runs]
        .reverse()
        .map((run) =>
          h(
            'tr',
            null,
            h('td', null, h('a', { href: `#/runs/${pathOf(run.runId)}` }, run.runId)),
            h('td', null, run.hook ?? ''),
            h('td', null, run.status),
            h('td', null, String(attemptsOf(run))),
            h('td', null, when(run.nextAttemptAt)),
            h('td', null, dispositionText(run.reply)),
            h('td', null, deliveryText(run.delivery)),
            h('td', null, when(run.at)),
          ),
        ),
    ),
    page.runs.length === 0 ? h('p', null, 'No runs match.') : '',
    page.before ? h('p', null, h('a', { href: `#/runs?${older}` }, 'Older')) : '',
  );
}
