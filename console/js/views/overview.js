// Overview: every hook (its action, how it authenticates, paused and held, the last hour's requests
// by outcome as a small chart, the last request, open failures) and the instance's health.
import { h, fill, facts, table, when } from '../dom.js';
import { get, pathOf } from '../api.js';

const OUTCOMES = ['2xx', '4xx', '5xx', 'duplicate', 'held', 'ignored'];
const SVG = 'http://www.w3.org/2000/svg';

/** The last hour's outcomes as one stacked bar, with the same counts as its accessible name. */
function chart(lastHour = {}) {
  const total = OUTCOMES.reduce((sum, name) => sum + (lastHour[name] ?? 0), 0);
  const label =
    total === 0
      ? 'no requests in the last hour'
      : OUTCOMES.filter((n) => lastHour[n])
          .map((n) => `${n}: ${lastHour[n]}`)
          .join(', ');
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', '0 0 120 12');
  svg.setAttribute('width', '120');
  svg.setAttribute('height', '12');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', label);
  let x = 0;
  for (const name of OUTCOMES) {
    const count = lastHour[name] ?? 0;
    if (!count) continue;
    const rect = document.createElementNS(SVG, 'rect');
    const width = (count / total) * 120;
    rect.setAttribute('x', String(x));
    rect.setAttribute('width', String(width));
    rect.setAttribute('height', '12');
    rect.setAttribute('class', `bar-${name}`);
    svg.append(rect);
    x += width;
  }
  return h('span', { class: 'chart' }, svg, h('span', { class: 'chart-text' }, label));
}

function hookRow(hook) {
  return h(
    'tr',
    null,
    h('th', { scope: 'row' }, h('a', { href: `#/hooks/${pathOf(hook.name)}` }, hook.name)),
    h('td', null, hook.action ?? ''),
    h('td', null, hook.auth ?? ''),
    h('td', null, hook.paused ? `paused (${hook.held ?? 0} held)` : 'running'),
    h('td', null, chart(hook.lastHour)),
    h('td', null, when(hook.lastRequestAt)),
    h(
      'td',
      null,
      hook.openFailures
        ? h('a', { href: `#/failures?hook=${encodeURIComponent(hook.name)}` }, String(hook.openFailures))
        : '0',
    ),
  );
}

export async function render(main) {
  const { instance = {}, hooks = [] } = await get('overview');
  const runs = instance.runs ?? {};
  fill(
    main,
    h('h1', null, 'Overview'),
    table(
      'Hooks',
      ['Hook', 'Action', 'Authentication', 'State', 'Last hour', 'Last request', 'Open failures'],
      hooks.map(hookRow),
    ),
    h('h2', null, 'This instance'),
    facts([
      ['Up since', when(instance.startedAt)],
      ['Shared state', instance.sharedState],
      ['Runs running', String(runs.running ?? 0)],
      ['Runs queued', String(runs.queued ?? 0)],
      ['Runs retrying', String(runs.retrying ?? 0)],
      ['Deliveries pending', String(instance.pendingDeliveries ?? 0)],
    ]),
  );
}
