import { type Browser, chromium } from 'playwright-core';

/**
 * Debian's Chromium, headless, for the console's browser tests and its page-load benchmark. The
 * flags keep it off the network it would otherwise reach for (this machine's network is closed,
 * and refused connections slow every start) and out of the root sandbox it cannot have here.
 */
export function launchHeadlessChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
