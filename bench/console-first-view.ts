// The console's first render, measured as the owner meets it: the compiled standalone gateway in
// its own process, headless Chromium (test/helpers/browser.ts) logged in with the session cookie,
// the page opened at /ui/#/overview in a fresh context (nothing cached) and once more in the same
// context (a second visit). Prints the median "first view" (the page's hookgate-first-view mark
// after the page's response) and how many requests went over the network; BENCH_VERBOSE=1 adds each
// run and when each file and call started and ended. Given several checkouts (as bench/ab.ts),
// their gateways are visited in turn, run after run, so a before and after meet the same load.
// node --import tsx bench/console-first-view.ts [<checkout>…]   (FIRST_VIEW_RUNS, 15 by default)
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { chromiumPath } from '../test/helpers/browser.ts';
import { GATEWAY_TOKEN, ROOT, startHookgate } from './processes.ts';

const RUNS = Number(process.env.FIRST_VIEW_RUNS ?? 15);
const VERBOSE = process.env.BENCH_VERBOSE === '1';

interface Visit {
  firstViewMs: number;
  /** Requests that went to the network (not answered from the browser's cache). */
  fetched: number;
  resources: { name: string; start: number; end: number; bytes: number }[];
}

/** Read in the page (a string: tsx's helpers are not there); times: ms after the page's answer. */
const IN_PAGE = `(() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const at = (t) => Math.round((t - nav.responseEnd) * 10) / 10;
  const resources = performance.getEntriesByType('resource').map((r) => ({
    name: r.name.slice(r.name.indexOf('/ui/') + 4),
    start: at(r.startTime),
    end: at(r.responseEnd),
    bytes: r.transferSize,
  }));
  return {
    firstViewMs: at(performance.getEntriesByName('hookgate-first-view')[0].startTime),
    fetched: resources.filter((r) => r.bytes > 0).length,
    resources,
  };
})()`;

/** Resolves when the page has drawn its first view (body[data-ready]). */
const READY = `new Promise((resolve) => {
  const ready = () => document.body?.dataset.ready === 'true';
  if (ready()) return resolve();
  new MutationObserver((_, observer) => {
    if (ready()) (observer.disconnect(), resolve());
  }).observe(document, { attributes: true, subtree: true, attributeFilter: ['data-ready'] });
})`;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** The session cookie of a login with the gateway token. */
async function logIn(url: string): Promise<string> {
  const login = await fetch(`${url}/ui/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: url },
    body: JSON.stringify({ token: GATEWAY_TOKEN }),
  });
  const cookie = /hookgate_session=([^;]+)/.exec(login.headers.get('set-cookie') ?? '')?.[1];
  if (login.status !== 200 || !cookie) throw new Error(`the login answered ${login.status}`);
  return cookie;
}

/** A first visit in a fresh context, then a second visit to the page in the same context. */
async function visitTwice(browser: Browser, url: string, cookie: string): Promise<[Visit, Visit]> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  try {
    await context.addCookies([{ name: 'hookgate_session', value: cookie, url: `${url}/ui/` }]);
    const page = await context.newPage();
    const visit = async (): Promise<Visit> => {
      // Waited for by a plain evaluation: playwright's selector engine, injected into the page on
      // first use, would take the page's main thread while the view is being drawn.
      await page.goto(`${url}/ui/#/overview`, { waitUntil: 'commit' });
      await page.evaluate(READY);
      return (await page.evaluate(IN_PAGE)) as Visit;
    };
    const first = await visit();
    // A new navigation to the page (a reload would revalidate every file by itself).
    await page.goto('about:blank');
    return [first, await visit()];
  } finally {
    await context.close();
  }
}

function report(label: string, visits: Visit[]): void {
  const views = visits.map((v) => v.firstViewMs);
  console.log(
    `  ${label}: first view ${median(views)} ms median (${Math.min(...views)}–${Math.max(...views)}) of ${visits.length}; ` +
      `requests over the network ${median(visits.map((v) => v.fetched))} of ${visits[0]!.resources.length}`,
  );
  if (!VERBOSE) return;
  console.log(`    each run: ${views.join(', ')}`);
  for (const r of visits[0]!.resources) console.log(`    ${JSON.stringify(r)}`);
}

const roots = process.argv.slice(2).map((p) => path.resolve(p));
if (!roots.length) roots.push(ROOT);
const sides = [];
for (const root of roots) {
  const gw = await startHookgate({}, {}, {}, root);
  sides.push({ root, gw, cookie: await logIn(gw.url), first: [] as Visit[], second: [] as Visit[] });
}
const browser = await chromium.launch({ executablePath: chromiumPath(), headless: true, args: ['--no-sandbox'] });
try {
  // One unmeasured visit each: the browser's own first start is not the page's cost.
  for (const side of sides) await visitTwice(browser, side.gw.url, side.cookie);
  for (let run = 0; run < RUNS; run++) {
    for (const side of sides) {
      const [first, second] = await visitTwice(browser, side.gw.url, side.cookie);
      side.first.push(first);
      side.second.push(second);
    }
  }
  for (const side of sides) {
    console.log(side.root);
    report('first visit', side.first);
    report('second visit', side.second);
  }
} finally {
  await browser.close();
  for (const side of sides) await side.gw.stop();
}
