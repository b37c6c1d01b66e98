// Hooks: each hook paused or running with its held count, Pause and Resume; a hook's page shows its
// settings as configured, every secret shown only as where it comes from (the API replaces them).
import { h, fill, facts, say, table } from '../dom.js';
import { get, pathOf, post } from '../api.js';

function toggle(hook, route) {
  const verb = hook.paused ? 'resume' : 'pause';
  const label = hook.paused ? 'Resume' : 'Pause';
  const button = h('button', { type: 'button', 'aria-describedby': `hook-${hook.name}` }, label);
  button.addEventListener('click', async () => {
    button.disabled = true;
    try {
      const state = await post(`hooks/${pathOf(hook.name)}/${verb}`);
      await route.redraw();
      say(`${hook.name} ${state.paused ? 'paused' : 'resumed'}${state.held ? `, ${state.held} held` : ''}`);
      // Keyboard users stay where they were: on the same hook's button, now the other verb.
      document.querySelector(`[data-hook="${CSS.escape(hook.name)}"] button`)?.focus();
    } catch (err) {
      say(`${label} failed: ${err.message}`);
      button.disabled = false;
    }
  });
  return button;
}

async function detail(main, route) {
  const { hook } = await get(`hooks/${pathOf(route.id)}`);
  fill(
    main,
    h('h1', null, `Hook ${hook.name}`),
    facts([
      ['Action', hook.action],
      ['State', hook.paused ? 'paused' : 'running'],
      ['Held', String(hook.held ?? 0)],
    ]),
    h('p', { 'data-hook': hook.name, id: `hook-${hook.name}` }, toggle(hook, route)),
    h('h2', null, 'Settings'),
    h('pre', { class: 'settings' }, JSON.stringify(hook.settings ?? {}, null, 2)),
    h('p', null, h('a', { href: '#/hooks' }, 'All hooks')),
  );
}

export async function render(main, route) {
  if (route.id !== undefined) return detail(main, route);
  const { hooks } = await get('hooks');
  fill(
    main,
    h('h1', null, 'Hooks'),
    table(
      'Hooks',
      ['Hook', 'State', 'Held', 'Action'],
      hooks.map((hook) =>
        h(
          'tr',
          { 'data-hook': hook.name },
          h(
            'th',
            { scope: 'row', id: `hook-${hook.name}` },
            h('a', { href: `#/hooks/${pathOf(hook.name)}` }, hook.name),
          ),
          h('td', null, hook.paused ? 'paused' : 'running'),
          h('td', null, String(hook.held ?? 0)),
          h('td', null, toggle(hook, route)),
        ),
      ),
    ),
  );
}
