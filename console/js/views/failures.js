// Failures: open (or all) by hook, with their reason, attempts and time; Replay one, Replay all… of a
// hook since a time (the count is shown before the confirm), Dismiss, and Ask the assistant (one
// system event naming the failure in the main session).
import { h, fill, field, say, table, when } from '../dom.js';
import { get, pathOf, post } from '../api.js';

/** Open failures a bulk replay of `hook` since `sinceMs` would take: the server's own rule (lastAt). */
async function countOpen(hook, sinceMs) {
  const { failures } = await get('failures', { state: 'open', hook: hook || undefined, limit: 1000 });
  return failures.filter((f) => Date.parse(f.lastAt) >= sinceMs).length;
}

function actionButton(label, describedBy, act) {
  const button = h('button', { type: 'button', 'aria-describedby': describedBy }, label);
  button.addEventListener('click', async () => {
    button.disabled = true;
    try {
      say(await act());
    } catch (err) {
      say(`${label} failed: ${err.message}`);
      button.disabled = false;
    }
  });
  return button;
}

function failureRow(failure, route) {
  const rowId = `failure-${failure.id}`;
  const open = failure.state === 'open';
  return h(
    'tr',
    { 'data-failure': failure.id },
    h('th', { scope: 'row', id: rowId }, failure.id),
    h('td', null, failure.hook),
    h('td', null, failure.kind),
    h('td', null, [failure.channel, failure.to].filter(Boolean).join(' ')),
    h('td', { class: 'reason' }, failure.lastError),
    h('td', null, String(failure.attempts)),
    h('td', null, when(failure.lastAt)),
    h(
      'td',
      null,
      failure.state,
      failure.replayedBy ? [' by ', h('a', { href: `#/runs/${pathOf(failure.replayedBy)}` }, failure.replayedBy)] : '',
    ),
    h(
      'td',
      { class: 'actions' },
      open
        ? [
            actionButton('Replay', rowId, async () => {
              const answer = await post(`failures/${pathOf(failure.id)}/replay`);
              await route.redraw();
              return `Replayed ${failure.id}: run ${answer.runId}`;
            }),
            actionButton('Dismiss', rowId, async () => {
              await post(`failures/${pathOf(failure.id)}/dismiss`);
              await route.redraw();
              return `Dismissed ${failure.id}`;
            }),
          ]
        : '',
      actionButton('Ask the assistant', rowId, async () => {
        await post(`failures/${pathOf(failure.id)}/ask`);
        return `The assistant was told of ${failure.id} in its main session`;
      }),
    ),
  );
}

/** Replay all…: a hook and a time, the count, then the confirm. */
function bulkForm(route, hooks) {
  const hook = h(
    'select',
    { name: 'hook' },
    h('option', { value: '' }, 'every hook'),
    hooks.map((name) => h('option', { value: name, selected: route.query.get('hook') === name }, name)),
  );
  const since = h('input', { name: 'since', type: 'datetime-local' });
  const confirmBox = h('div', { class: 'confirm', role: 'group', 'aria-label': 'Confirm the replay' });
  const form = h(
    'form',
    { class: 'filters', 'aria-label': 'Replay all open failures of a hook' },
    field('bulk-hook', 'Hook', hook),
    field('bulk-since', 'Since', since),
    h('button', { type: 'submit' }, 'Replay all…'),
    confirmBox,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const sinceMs = since.value ? new Date(since.value).getTime() : 0;
    const count = await countOpen(hook.value, sinceMs);
    const what = `${count} open failure${count === 1 ? '' : 's'}${hook.value ? ` of ${hook.value}` : ''}${since.value ? ` since ${when(sinceMs)}` : ''}`;
    if (count === 0) {
      fill(confirmBox, h('p', { role: 'alert' }, `Nothing to replay: ${what}.`));
      return;
    }
    const go = h('button', { type: 'button' }, `Replay ${count}`);
    const cancel = h('button', { type: 'button' }, 'Cancel');
    fill(confirmBox, h('p', { role: 'alert' }, `Replay ${what}?`), go, cancel);
    go.focus();
    cancel.addEventListener('click', () => fill(confirmBox));
    go.addEventListener('click', async () => {
      go.disabled = true;
      const body = {
        failed: true,
        ...(hook.value ? { hook: hook.value } : {}),
        ...(since.value ? { since: new Date(sinceMs).toISOString() } : {}),
      };
      try {
        const answer = await post('replay', body);
        await route.redraw();
        say(`Replayed ${answer.replayed ?? count} failure(s)`);
      } catch (err) {
        say(`Replay all failed: ${err.message}`);
      }
    });
  });
  return form;
}

export async function render(main, route) {
  const state = route.query.get('state') === 'all' ? 'all' : 'open';
  const hook = route.query.get('hook') ?? undefined;
  const page = await get('failures', { state, hook, limit: 200 });
  const hooks = [...new Set(page.failures.map((f) => f.hook))].sort();
  const other = new URLSearchParams({ ...(hook ? { hook } : {}), state: state === 'open' ? 'all' : 'open' });
  fill(
    main,
    h('h1', null, 'Failures'),
    h(
      'p',
      null,
      state === 'open' ? 'Open failures. ' : 'All failures. ',
      h('a', { href: `#/failures?${other}` }, state === 'open' ? 'Show all' : 'Show open only'),
    ),
    bulkForm(route, hook && !hooks.includes(hook) ? [...hooks, hook] : hooks),
    table(
      'Failures, newest first',
      ['Failure', 'Hook', 'Kind', 'Recipient', 'Reason', 'Attempts', 'Last', 'State', 'Actions'],
      page.failures.map((f) => failureRow(f, route)),
    ),
    page.failures.length === 0 ? h('p', null, 'No failures.') : '',
  );
}
