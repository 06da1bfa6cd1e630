/**
 * A real browser for the dashboard's tests: Debian's chromium driven by playwright-core (no browser
 * is downloaded), launched once per test file, headless, and closed after the file's tests.
 */
import { after, before } from 'node:test';
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

/** Where Debian's chromium package puts the browser (`.ci/run` installs it when missing). */
export const CHROMIUM = process.env['PADLOCK_CHROMIUM'] ?? '/usr/bin/chromium';

/** Why browser tests cannot run here, or `undefined` when they can. */
export const noChromium: string | undefined = existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is missing (apt-get install chromium; .ci/run does)`;

/** The file's browser: `page()` opens a new tab (closed after the file's tests). */
export function useBrowser(): { page(): Promise<Page> } {
  let browser: Browser | undefined;
  before(async () => {
    if (noChromium === undefined) browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'] });
  });
  after(async () => {
    await browser?.close();
  });
  return {
    page: async () => {
      if (browser === undefined) throw new Error('no browser (was the test skipped?)');
      const page = await browser.newPage({ viewport: { width: 1280, height: 800 }, reducedMotion: 'reduce' });
      // Assertions wait for the page's live updates; on a loaded machine they may take a few seconds.
      page.setDefaultTimeout(15_000);
      return page;
    },
  };
}
