/**
 * The README shows a screenshot of every view of the dashboard's menu, and each is there: a PNG
 * in docs/dashboard/ (made by tools/dashboard-screenshots.ts), of the page's width.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

it('every view of the dashboard has its screenshot in the README', () => {
  const html = fs.readFileSync(path.join(ROOT, 'src/rpc/dashboard/index.html'), 'utf8');
  const views = [...html.matchAll(/data-view="([a-z]+)"/g)].map((m) => m[1]!);
  expect(views).toEqual(['overview', 'peers', 'channels', 'payments', 'invoices', 'graph']);
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  for (const view of views) {
    const file = `docs/dashboard/${view}.png`;
    expect(readme, view).toContain(`](${file})`);
    const png = fs.readFileSync(path.join(ROOT, file));
    expect(png.subarray(1, 4).toString('latin1'), file).toBe('PNG');
    // IHDR: width and height, big-endian, at bytes 16 and 20 (the tool's viewport is 1100 wide).
    expect(png.readUInt32BE(16), file).toBe(1100);
    expect(png.readUInt32BE(20), file).toBeGreaterThanOrEqual(640);
  }
});
