/**
 * Regenerates the dashboard screenshots of the README (docs/dashboard/*.png, one per view of the
 * page's menu) from a running devnet: `node --import tsx tools/dashboard-screenshots.ts [devnet
 * dir] [node name]` (defaults: devnet-data, the first node). Run some traffic first (`strand
 * devnet traffic`) so the tables have rows. The invoices view lists the invoices the page made or
 * saw change: the tool makes one through the page's form first (an open invoice of 2.5 CKB stays
 * on the node). Uses Debian's chromium (CHROMIUM_PATH to override).
 */
import fs from 'node:fs';
import path from 'node:path';
import { launchChromium } from '../test/helpers/chromium.ts';

/** Every view of the page's menu (`data-view` in src/rpc/dashboard/index.html). */
const VIEWS = ['overview', 'peers', 'channels', 'payments', 'invoices', 'graph'] as const;
const WIDTH = 1100;
const MAX_HEIGHT = 900;

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
  const page = await browser.newPage({ viewport: { width: WIDTH, height: 640 } });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  await page.goto(`${node.rpc_url}/dashboard/`);
  await page.waitForSelector('body[data-ready=true]');
  await page.waitForSelector('#live.on');
  // Invoices last: the notice its form leaves would show on the views after it.
  for (const view of [...VIEWS.filter((v) => v !== 'invoices'), 'invoices'] as const) {
    await page.click(`nav button[data-view=${view}]`);
    if (view === 'invoices') {
      await page.fill('#invoice-form input[name=amount]', '2.5');
      await page.fill('#invoice-form input[name=description]', 'coffee');
      await page.click('#invoice-form button[type=submit]');
      await page.locator('#new-invoice:not([hidden])').waitFor();
    }
    const file = path.join(out, `${view}.png`);
    // The whole page, up to a height that shows the first rows of a long table.
    const height = Math.min(Number(await page.evaluate('document.documentElement.scrollHeight')), MAX_HEIGHT);
    await page.screenshot({ path: file, fullPage: true, clip: { x: 0, y: 0, width: WIDTH, height } });
    process.stdout.write(`${path.relative(process.cwd(), file)}\n`);
  }
  if (errors.length > 0) throw new Error(`the page reported errors:\n${errors.join('\n')}`);
} finally {
  await browser.close();
}
