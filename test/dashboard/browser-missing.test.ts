import { describe, expect, it } from 'vitest';

import { launchChromium } from '../helpers/browser.js';

describe('browser tests without a browser', () => {
  it('fail (never skip) with a message saying how to install Chromium', async () => {
    await expect(launchChromium('/nonexistent/chromium')).rejects.toThrow(
      /Chromium not found at \/nonexistent\/chromium: install it with `apt-get install -y chromium`/,
    );
  });
});
