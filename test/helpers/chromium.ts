// Debian's chromium driven by playwright-core for the admin UI's browser tests (never a downloaded browser).
import { existsSync } from 'node:fs';

export const CHROMIUM = '/usr/bin/chromium';
/** `describe(..., { skip })` where the browser is not installed. */
export const chromiumSkip = existsSync(CHROMIUM) ? false : `no ${CHROMIUM} (apt-get install chromium; .ci/run installs it)`;

export type Browser = import('playwright-core').Browser;
export type Page = import('playwright-core').Page;

/** A headless browser and one page of 1280 x 800; close the browser when done. */
export async function launchPage(): Promise<{ browser: Browser; page: Page }> {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  return { browser, page: await browser.newPage({ viewport: { width: 1280, height: 800 } }) };
}
