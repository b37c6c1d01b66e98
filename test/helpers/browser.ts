// A real Chromium for the console's browser tests: Debian's `chromium` (test/ensure-chromium.sh
// installs it; HOOKGATE_CHROMIUM names another), headless, driven by playwright-core over CDP. Every
// request the page makes is recorded, so a test can show nothing left loopback; axe-core is run in
// the page through the DevTools protocol (the console's CSP refuses an injected script tag, as it
// should).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/** The Chromium binary: HOOKGATE_CHROMIUM, else `chromium` on the PATH. */
export function chromiumPath(): string {
  const named = process.env.HOOKGATE_CHROMIUM;
  if (named) return named;
  try {
    return execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error('chromium is missing: run sh test/ensure-chromium.sh (npm test does)');
  }
}

export interface TestBrowser {
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** Every URL the page asked for, in order. */
  requested: string[];
  close(): Promise<void>;
}

export async function openBrowser(): Promise<TestBrowser> {
  // We run as root in CI containers: Chromium's sandbox needs a user namespace it cannot have there.
  const browser = await chromium.launch({ executablePath: chromiumPath(), headless: true, args: ['--no-sandbox'] });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  context.setDefaultTimeout(60_000);
  const requested: string[] = [];
  context.on('request', (request) => requested.push(request.url()));
  const page = await context.newPage();
  return { browser, context, page, requested, close: () => browser.close() };
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/** axe-core's serious and critical violations on the page as it is now. */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: AxeViolation[] }> } }).axe;
    return (await axe.run()).violations;
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}
