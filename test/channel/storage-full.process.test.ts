/**
 * A node whose store fills up (a real SQLITE_FULL: its connection's `max_page_count` capped at
 * the packed size through `STRAND_DEV_STORE_QUOTA_FILE`): the RPC names the storage failure with
 * its code, no false protocol error is logged, and a payment the peer sends meanwhile completes
 * by itself once space returns — no restart.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type NodeProcess, tempDir } from '../helpers/node-process.ts';
import { CKB, type DevchainProcess, readyPair, rpc, startDevchain, until } from './process-helpers.ts';

const hex = (v: bigint) => `0x${v.toString(16)}`;
const MODULES = ['info', 'peer', 'channel', 'graph', 'payment', 'invoice'];
const quota = path.join(tempDir('strand-quota-'), 'quota');
let chain: DevchainProcess;
let a: NodeProcess;
let b: NodeProcess;

beforeAll(async () => {
  chain = await startDevchain([1, 2]);
  ({ a, b } = await readyPair(chain.url, MODULES, { STRAND_DEV_STORE_QUOTA_FILE: quota }));
}, 180_000);

afterAll(async () => {
  if (process.env.DEBUG_CH) console.log(a?.output().slice(-8000));
  await Promise.all([a?.stop(), b?.stop()]);
  await chain?.stop();
});

const quotaLines = () =>
  a
    .output()
    .split('\n')
    .filter((l) => l.includes('dev store page quota applied'));

describe('a full store', () => {
  it('is named by the RPC, logs no protocol error, and the channel resumes when space returns', async () => {
    const amount = 5n * CKB;
    const inv = await rpc(a, 'new_invoice', { amount: hex(amount), currency: 'Fibd' });
    const seen = quotaLines().length;
    fs.writeFileSync(quota, '1');
    await until(
      'the cap to apply',
      async () => quotaLines().length,
      (n) => n > seen,
      20_000,
    );

    let refused: { code: number; message: string; data?: unknown } | undefined;
    for (let i = 0; i < 500 && !refused; i++)
      refused = (await a.call('new_invoice', [{ amount: hex(1000n + BigInt(i)), currency: 'Fibd' }])).error;
    expect(refused).toMatchObject({ code: -32000, data: { code: 'SQLITE_FULL' } });
    expect(refused!.message).toMatch(/^storage failure: .*\(SQLITE_FULL\)$/);

    const sent = await until(
      'a route from b to a',
      () => b.call('send_payment', [{ invoice: inv.invoice_address }]),
      (r) => !r.error || !/Failed to build route/.test(r.error.message),
    );
    expect(sent.error).toBeUndefined();
    const hash = sent.result.payment_hash;
    // Full over a reconnection too: its reestablish cannot be stored either.
    await until(
      'a to fail storing the step, then again after a reconnection',
      async () => a.output().split('channel step not stored').length - 1,
      (n) => n >= 2,
    );
    expect((await rpc(b, 'get_payment', { payment_hash: hash })).status).not.toBe('Success');

    fs.writeFileSync(quota, '0');
    const done = await until(
      'the payment to end, with no restart',
      () => rpc(b, 'get_payment', { payment_hash: hash }),
      (p) => p.status === 'Success' || p.status === 'Failed',
      120_000,
    );
    expect(done.status).toBe('Success');
    expect((await rpc(a, 'get_invoice', { payment_hash: hash })).status).toBe('Paid');
    expect(a.output()).not.toMatch(/channel protocol error|invalid commitment signature/);
    const [ca, cb] = [
      (await rpc(a, 'list_channels', {})).channels[0],
      (await rpc(b, 'list_channels', {})).channels[0],
    ];
    expect(ca.state.state_name).toBe('CHANNEL_READY');
    expect(ca.local_balance).toBe(cb.remote_balance);
  }, 300_000);
});
