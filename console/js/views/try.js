// Try a hook: the dry run of `hookgate webhooks test` in the page. Pick a hook, paste a body and
// headers, and see the plan as the command prints it; nothing runs, nothing is stored.
import { h, fill, field, say } from '../dom.js';
import { get, post } from '../api.js';

/** "Name: value" lines as a headers object; a line without a colon is skipped. */
function headersOf(text) {
  const headers = {};
  for (const line of text.split('\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return headers;
}

export async function render(main, route) {
  const { hooks } = await get('hooks');
  const chosen = route.query.get('hook');
  const hook = h(
    'select',
    { name: 'hook' },
    hooks.map((each) => h('option', { value: each.name, selected: each.name === chosen }, each.name)),
  );
  const body = h('textarea', { name: 'body', rows: '8', spellcheck: 'false' }, '{"text":"hello"}');
  const headers = h('textarea', {
    name: 'headers',
    rows: '3',
    spellcheck: 'false',
    placeholder: 'X-GitHub-Event: push',
  });
  const out = h('pre', { class: 'plan', 'aria-live': 'polite' });
  const form = h(
    'form',
    { 'aria-label': 'Try a hook' },
    field('try-hook', 'Hook', hook),
    field('try-body', 'Body', body),
    field('try-headers', 'Headers (one "Name: value" a line)', headers),
    h('button', { type: 'submit' }, 'Try'),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const answer = await post('dry-run', { hook: hook.value, body: body.value, headers: headersOf(headers.value) });
      out.textContent = answer.text;
      say('Dry run done: nothing was carried out');
    } catch (err) {
      out.textContent = `${err.code ?? 'error'}: ${err.message}`;
    }
  });
  fill(
    main,
    h('h1', null, 'Try a hook'),
    h('p', null, 'A dry run: the plan the hook would follow, with no effect and nothing stored.'),
    form,
    h('h2', null, 'Plan'),
    out,
  );
}
