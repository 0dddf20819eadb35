/**
 * The dashboard against a real devnet (dev chain + two node processes), driven in headless
 * Chromium as a user would: alice's page connects to bob, opens a channel and waits for it to be
 * ready; bob's page creates an invoice; alice's page pays it and the payment turns Success live,
 * while bob's invoice turns Paid live, with no console error on either page.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRpcClient } from '../../src/rpc/client.ts';
import { chromiumAvailable, launchChromium } from '../helpers/chromium.ts';
import { type DevnetProcess, startDevnetProcess } from '../helpers/devnet-process.ts';

const TOPOLOGY = 'nodes: 2\npeers: []\nchannels: []\n';
const CKB = 100_000_000n;

describe.skipIf(!chromiumAvailable())('dashboard on a devnet', { timeout: 300_000 }, () => {
  let net: DevnetProcess;
  let browser: Browser;
  const errors: string[] = [];

  beforeAll(async () => {
    [net, browser] = await Promise.all([startDevnetProcess(TOPOLOGY), launchChromium()]);
  }, 240_000);
  afterAll(async () => {
    await browser?.close();
    await net?.stop();
  });

  async function open(name: string): Promise<Page> {
    const node = net.description.nodes.find((n) => n.name === name)!;
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    page.on('pageerror', (e) => errors.push(`${name}: ${e}`));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(`${name}: ${m.text()}`);
    });
    await page.goto(`${node.rpc_url}/dashboard/`);
    await page.waitForSelector('body[data-ready=true]');
    await page.waitForSelector('#live.on');
    return page;
  }

  it('connects, opens a channel, creates an invoice and pays it through the page', async () => {
    const [alice, bob] = net.description.nodes;
    const alicePage = await open('alice');
    const bobPage = await open('bob');
    expect(await alicePage.textContent('#node-name')).toBe('alice');

    await alicePage.click('nav button[data-view=peers]');
    await alicePage.fill('#connect-form input[name=address]', bob!.p2p_address);
    await alicePage.click('#connect-form button[type=submit]');
    await alicePage.locator(`#peers-table tr[data-key="${bob!.pubkey.replace(/^0x/, '')}"]`).waitFor();

    await alicePage.click('nav button[data-view=channels]');
    await alicePage.fill('#open-form input[name=pubkey]', bob!.pubkey);
    await alicePage.fill('#open-form input[name=funding]', '300');
    await alicePage.click('#open-form button[type=submit]');
    await alicePage.locator('#notice', { hasText: 'channel opening' }).waitFor();
    await alicePage.locator('#channels-table td.status-CHANNEL_READY').waitFor({ timeout: 120_000 });

    await bobPage.click('nav button[data-view=invoices]');
    await bobPage.fill('#invoice-form input[name=amount]', '2.5');
    await bobPage.fill('#invoice-form input[name=description]', 'coffee');
    await bobPage.click('#invoice-form button[type=submit]');
    await bobPage.locator('#new-invoice:not([hidden])').waitFor();
    const invoice = (await bobPage.textContent('#new-invoice'))!;
    expect(invoice).toMatch(/^fibd/);
    const bobInvoiceRow = bobPage.locator('#invoices-table tbody tr', { hasText: 'coffee' });
    expect(await bobInvoiceRow.locator('.invoice-status').textContent()).toBe('Open');

    // Right after the channel is ready the payer may not have a route yet (the seed says: retry).
    await alicePage.click('nav button[data-view=payments]');
    let hash = '';
    for (let attempt = 0; attempt < 20 && !hash; attempt++) {
      await alicePage.fill('#pay-form input[name=invoice]', invoice);
      await alicePage.click('#pay-form button[type=submit]');
      await alicePage.locator('#pay-form button[type=submit]:not([disabled])').waitFor();
      const notice = (await alicePage.textContent('#notice')) ?? '';
      const m = /^payment (0x[0-9a-f]{64})/.exec(notice);
      if (m) hash = m[1]!;
      else await new Promise((r) => setTimeout(r, 1000));
    }
    expect(hash).not.toBe('');
    // Success arrives through the subscription: the page does not poll payments while live.
    await alicePage.locator(`#payments-table tr[data-key="${hash}"] .status-Success`).waitFor();
    await bobInvoiceRow.locator('.status-Paid').waitFor();

    const payment = await createRpcClient(alice!.rpc_url).call('get_payment', { payment_hash: hash });
    expect(payment.status).toBe('Success');
    const { channels } = await createRpcClient(bob!.rpc_url).call('list_channels', {});
    // bob accepted with 250 CKB of his own, less the 62 CKB reserve, and received 2.5 CKB.
    expect(BigInt(channels[0].local_balance)).toBe(188n * CKB + 250_000_000n);
    // alice's overview: 300 CKB funded, less the 62 CKB reserve and the 2.5 CKB paid.
    await alicePage.click('nav button[data-view=overview]');
    await alicePage.locator('#balances dd[data-field=local]', { hasText: /^235\.5 CKB$/ }).waitFor();
    expect(errors).toEqual([]);
  });
});
