/**
 * `strand devnet --cch`: the hub on alice with the LND double, wrapped-BTC channels each way
 * between alice and bob, and the README's walk-through: a Lightning → Fiber swap paid by the
 * outside payer through the double's control endpoint, and a Fiber → Lightning swap to an outside
 * payee's invoice made there.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { createRpcClient } from '../../src/rpc/client.ts';
import { STRAND_BIN, tempDir } from '../helpers/node-process.ts';
import { devnetBasePort } from '../helpers/ports.ts';

const basePort = devnetBasePort();
// Inside this worker's window of ports, above what the chain and nodes take.
const lndPort = basePort + 190;
let proc: ChildProcess | undefined;

afterAll(async () => {
  if (proc && proc.exitCode === null)
    await new Promise((resolve) => {
      proc!.once('exit', resolve);
      proc!.kill('SIGINT');
    });
});

const poll = async <T>(fn: () => Promise<T>, pred: (v: T) => boolean): Promise<T> => {
  for (let i = 0; i < 300; i++) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined && pred(v)) return v;
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error('condition not reached');
};

describe('strand devnet --cch', { timeout: 240_000 }, () => {
  it('runs the hub on alice with the LND double; swaps go through both ways', async () => {
    const p = spawn(process.execPath, [
      STRAND_BIN,
      'devnet',
      '-d',
      tempDir('strand-devnet-cch-'),
      '--nodes',
      '2',
      '--cch',
      '--base-port',
      String(basePort),
      '--lnd-port',
      String(lndPort),
      '--block-interval',
      '200',
    ]);
    proc = p;
    let out = '';
    p.stdout.on('data', (d) => {
      out += d;
    });
    p.stderr.on('data', (d) => {
      out += d;
    });
    await new Promise<void>((resolve, reject) => {
      const timer = setInterval(() => {
        if (!out.includes('Ctrl-C stops it')) return;
        clearInterval(timer);
        resolve();
      }, 100);
      p.once('exit', (code) => reject(new Error(`devnet exited with ${code}:\n${out}`)));
    });
    expect(out).toContain(`lightning: LND double at https://127.0.0.1:${lndPort}`);
    expect(out).toContain('channel: bob → alice CHANNEL_READY');
    const alice = createRpcClient(`http://127.0.0.1:${basePort + 113}`);
    const bob = createRpcClient(`http://127.0.0.1:${basePort + 123}`);
    const ln = createRpcClient(`http://127.0.0.1:${lndPort + 1}`);
    const chain = createRpcClient(`http://127.0.0.1:${basePort}`);
    const udt = (await chain.call('get_dev_scripts')).test_udt.script;

    // Lightning → Fiber.
    const preimage = `0x${randomBytes(32).toString('hex')}`;
    const inv = await bob.call('new_invoice', {
      amount: '0x2710',
      currency: 'Fibd',
      payment_preimage: preimage,
      hash_algorithm: 'sha256',
      udt_type_script: udt,
      final_expiry_delta: '0xa4cb80',
    });
    const order = await alice.call('receive_btc', { fiber_pay_req: inv.invoice_address });
    await ln.call('pay_invoice', { payment_request: order.incoming_invoice.Lightning });
    const settled = await poll(
      () => ln.call('get_invoice', { payment_hash: order.payment_hash }),
      (i) => i.state === 'SETTLED',
    );
    expect(settled.preimage).toBe(preimage);
    expect((await alice.call('get_cch_order', { payment_hash: order.payment_hash })).status).toBe('Success');

    // Fiber → Lightning.
    const outside = await ln.call('new_invoice', { amount_sat: 20_000 });
    const sendOrder = await alice.call('send_btc', {
      btc_pay_req: outside.payment_request,
      currency: 'Fibd',
    });
    await poll(
      () => bob.call('send_payment', { invoice: sendOrder.incoming_invoice.Fiber }),
      () => true,
    );
    const done = await poll(
      () => alice.call('get_cch_order', { payment_hash: outside.payment_hash }),
      (o) => o.status === 'Success' || o.status === 'Failed',
    );
    expect(done.status).toBe('Success');
    expect((await ln.call('get_payment', { payment_hash: outside.payment_hash })).state).toBe('SUCCEEDED');
  });
});
