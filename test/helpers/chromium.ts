/**
 * Debian's chromium driven by playwright-core, as the interop tests launch it (no browser download:
 * CHROMIUM_PATH or /usr/bin/chromium). Missing outside CI: tests skip; in CI a missing browser fails.
 */
import fs from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export function chromiumAvailable(): boolean {
  const ok = fs.existsSync(CHROMIUM);
  if (!ok && process.env.CI) throw new Error(`${CHROMIUM} is missing (CI runs the browser tests)`);
  return ok;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
