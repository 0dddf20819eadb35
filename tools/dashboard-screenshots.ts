/**
 * Regenerates the dashboard screenshots of the README (docs/dashboard/*.png) from a running
 * devnet: `node --import tsx tools/dashboard-screenshots.ts [devnet dir] [node name]` (defaults:
 * devnet-data, the first node). Run some traffic first (`strand devnet traffic`) so the tables
 * have rows. Uses Debian's chromium (CHROMIUM_PATH to override).
 */
import fs from 'node:fs';
import path from 'node:path';
import { launchChromium } from '../test/helpers/chromium.ts';

export const VIEWS = ['overview', 'channels', 'payments', 'graph'] as const;

const dir = path.resolve(process.argv[2] ?? 'devnet-data');
const description = JSON.parse(fs.readFileSync(path.join(dir, 'devnet.json'), 'utf8')) as {
  nodes: { name: string; rpc_url: string }[];
};
const node = description.nodes.find((n) => n.name === (process.argv[3] ?? description.nodes[0]?.name));
if (!node) throw new Error(`no node ${process.argv[3]} in ${dir}/devnet.json`);

const out = path.join(import.meta.dirname, '../docs/dashboard');
fs.mkdirSync(out, { recursive: true });
const browser = await launchChromium();
try {
  const page = await browser.newPage({ viewport: { width: 1100, height: 640 } });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  await page.goto(`${node.rpc_url}/dashboard/`);
  await page.waitForSelector('body[data-ready=true]');
  await page.waitForSelector('#live.on');
  for (const view of VIEWS) {
    await page.click(`nav button[data-view=${view}]`);
    const file = path.join(out, `${view}.png`);
    await page.screenshot({ path: file, fullPage: true });
    process.stdout.write(`${path.relative(process.cwd(), file)}\n`);
  }
  if (errors.length > 0) throw new Error(`the page reported errors:\n${errors.join('\n')}`);
} finally {
  await browser.close();
}
