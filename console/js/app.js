// The console's page: the router (each view has its own address, #/<view>[/<id>][?filters], so a
// reload or a shared link opens the same view), the navigation's current link, and Log out. A view
// is a module whose render(main, route) draws into <main> and may return a function that stops
// what it started (the live tail's connection).
import { h, fill, say } from './dom.js';
import { ApiError, logout, openSession } from './api.js';
import * as overview from './views/overview.js';
import * as requests from './views/requests.js';
import * as runs from './views/runs.js';
import * as failures from './views/failures.js';
import * as hooks from './views/hooks.js';
import * as tryHook from './views/try.js';

const VIEWS = { overview, requests, runs, failures, hooks, try: tryHook };
const main = document.getElementById('view');
let stop;
let drawn = 0;

/** The route in the address: view, id (a request, run or hook) and its query. */
function currentRoute() {
  const hash = location.hash.startsWith('#/') ? location.hash.slice(2) : 'overview';
  const q = hash.indexOf('?');
  const [view, ...rest] = (q < 0 ? hash : hash.slice(0, q)).split('/');
  return {
    view: VIEWS[view] ? view : 'overview',
    id: rest.length ? decodeURIComponent(rest.join('/')) : undefined,
    query: new URLSearchParams(q < 0 ? '' : hash.slice(q + 1)),
    /** Draws the view again (after an action changed what it shows). */
    redraw: () => draw(),
  };
}

async function draw() {
  if (location.hash !== '' && !location.hash.startsWith('#/')) return;
  stop?.();
  stop = undefined;
  const route = currentRoute();
  const turn = ++drawn;
  for (const link of document.querySelectorAll('nav a')) {
    if (link.getAttribute('href') === `#/${route.view}`) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  say('');
  fill(main, h('p', { class: 'loading' }, 'Loading…'));
  try {
    const stopper = await VIEWS[route.view].render(main, route);
    if (turn === drawn) stop = stopper;
    else stopper?.();
  } catch (err) {
    if (turn !== drawn) return;
    fill(
      main,
      h('h1', null, 'Could not load this view'),
      h('p', { class: 'error', role: 'alert' }, err instanceof ApiError ? err.message : String(err)),
    );
  }
  document.title = `hookgate console: ${main.querySelector('h1')?.textContent ?? route.view}`;
}

document.getElementById('logout').addEventListener('click', async () => {
  try {
    await logout();
  } finally {
    location.reload();
  }
});

window.addEventListener('hashchange', async () => {
  await draw();
  main.focus();
});

// The session (the anti-forgery token, needed only by a change) is read beside the view's own data,
// not before it: one round trip less before the first view.
const opened = openSession();
opened.catch(() => {}); // a 401 reloads the page (api.js); others surface at the first change
await draw();
performance.mark('hookgate-first-view');
await opened;
document.body.dataset.ready = 'true';
