/**
 * A sender killed with SIGKILL right after `send_payment` returned (real processes, real dev
 * chain): restarted on the same directory, it resumes the payment, which ends Success (or Failed
 * with a reason) — never stuck Inflight, never paid twice — and both sides agree on the balances.
 * The kill lands at a few delays after the answer, so that it cuts the payment at various points.
 */

import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CKB, connect, type DevchainProcess, rpc, startDevchain, until } from '../channel/process-helpers.ts';
import { type NodeProcess, startNode, tempDir } from '../helpers/node-process.ts';

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/fiber-test-nodes');
const hex = (v: bigint) => `0x${v.toString(16)}`;

let chain: DevchainProcess;
let a: NodeProcess;
let b: NodeProcess;

/** A node with fixture `n`'s keys and the payment modules; `dir` restarts a previous one. */
async function paymentNode(
  n: number,
  fiber: Record<string, unknown> = {},
  dir?: string,
): Promise<NodeProcess> {
  const home = dir ?? tempDir();
  if (!dir) {
    fs.mkdirSync(path.join(home, 'ckb'), { recursive: true });
    fs.mkdirSync(path.join(home, 'fiber'), { recursive: true });
    fs.copyFileSync(path.join(FIXTURES, `${n}/ckb/plain_key`), path.join(home, 'ckb/key'));
    fs.copyFileSync(path.join(FIXTURES, `${n}/fiber/sk`), path.join(home, 'fiber/sk'));
  }
  return startNode({
    dir: home,
    config: {
      fiber: { chain: 'dev', listening_addr: '/ip4/127.0.0.1/tcp/0', ...fiber },
      rpc: {
        listening_addr: '127.0.0.1:0',
        enabled_modules: ['info', 'peer', 'channel', 'graph', 'payment', 'invoice'],
      },
      services: ['fiber', 'rpc', 'ckb'],
      ckb: { rpc_url: chain.url },
    },
    env: { FIBER_SECRET_KEY_PASSWORD: 'password1' },
  });
}

async function kill9(node: NodeProcess): Promise<void> {
  if (node.proc.exitCode !== null) return;
  const exited = new Promise((r) => node.proc.once('exit', r));
  node.proc.kill('SIGKILL');
  await exited;
}

async function channelOf(node: NodeProcess) {
  return (await rpc(node, 'list_channels', {})).channels[0];
}

/** Both sides idle (no TLC pending) and agreeing on who holds what. */
async function settledBalances(): Promise<{ a: bigint; b: bigint }> {
  let seen: { a: any; b: any } = { a: null, b: null };
  await until(
    'both sides settled and agreeing',
    async () => {
      seen = { a: await channelOf(a), b: await channelOf(b) };
      return seen;
    },
    ({ a: ca, b: cb }) =>
      ca.pending_tlcs.length === 0 &&
      cb.pending_tlcs.length === 0 &&
      ca.local_balance === cb.remote_balance &&
      ca.remote_balance === cb.local_balance,
    90_000,
  );
  return { a: BigInt(seen.a.local_balance), b: BigInt(seen.b.local_balance) };
}

beforeAll(async () => {
  chain = await startDevchain([1, 2]);
  a = await paymentNode(1);
  b = await paymentNode(2, { auto_accept_channel_ckb_funding_amount: Number(250n * CKB) });
  const { bInfo } = await connect(a, b);
  await rpc(a, 'open_channel', { pubkey: bInfo.pubkey, funding_amount: hex(500n * CKB), public: false });
  for (const n of [a, b])
    await until(
      'channel ready',
      () => channelOf(n),
      (c) => c?.state.state_name === 'CHANNEL_READY',
    );
}, 180_000);

afterAll(async () => {
  if (process.env.DEBUG_CH) console.log(a?.output().slice(-6000), '\n-----\n', b?.output().slice(-4000));
  await a?.stop();
  await b?.stop();
  await chain?.stop();
});

describe('a sender killed right after send_payment', () => {
  for (const delayMs of [0, 20, 150]) {
    it(`resumes the payment after a SIGKILL ${delayMs} ms after the answer`, async () => {
      const before = await settledBalances();
      const amount = 10n * CKB;
      const inv = await rpc(b, 'new_invoice', { amount: hex(amount), currency: 'Fibd' });
      const hash = inv.invoice.data.payment_hash;
      const sent = await until(
        'a route to b',
        () => a.call('send_payment', [{ invoice: inv.invoice_address }]),
        (r) => !r.error || !/Failed to build route/.test(r.error.message),
      );
      expect(sent.error).toBeUndefined();
      expect(sent.result.status).toBe('Created');
      if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
      await kill9(a);

      a = await paymentNode(1, {}, a.dir);
      const done = await until(
        'the payment to end',
        () => rpc(a, 'get_payment', { payment_hash: hash }),
        (p) => p.status === 'Success' || p.status === 'Failed',
        90_000,
      );
      const after = await settledBalances();
      const invoice = await rpc(b, 'get_invoice', { payment_hash: hash });
      if (done.status === 'Success') {
        expect(invoice.status).toBe('Paid');
        expect(after.a).toBe(before.a - amount);
        expect(after.b).toBe(before.b + amount);
      } else {
        expect(done.failed_error).toEqual(expect.any(String));
        expect(invoice.status).not.toBe('Paid');
        expect(after).toEqual(before);
      }
    }, 180_000);
  }

  it('sends again, after the restart, a payment whose TLC was still waiting for the channel', async () => {
    const before = await settledBalances();
    const amount = 7n * CKB;
    const invoices = [
      await rpc(b, 'new_invoice', { amount: hex(amount), currency: 'Fibd' }),
      await rpc(b, 'new_invoice', { amount: hex(amount), currency: 'Fibd' }),
    ];
    const hashes = invoices.map((i) => i.invoice.data.payment_hash as string);
    // B frozen: the first payment's TLC round cannot end, so the second one's TLC waits for the
    // channel — the node is killed while it waits, its attempt saved but its TLC never offered.
    b.proc.kill('SIGSTOP');
    try {
      for (const inv of invoices) {
        const sent = await rpc(a, 'send_payment', { invoice: inv.invoice_address });
        expect(sent.status).toBe('Created');
      }
      await new Promise((r) => setTimeout(r, 300));
      await kill9(a);
      a = await paymentNode(1, {}, a.dir);
    } finally {
      b.proc.kill('SIGCONT');
    }
    // The restarted node found the first TLC in the channel and the second one nowhere.
    expect(a.output()).toMatch(/"status":"Inflight","inflight":1,"msg":"payment session resumed"/);
    expect(a.output()).toMatch(/"status":"Created","inflight":0,"msg":"payment session resumed"/);
    const ends = [];
    for (const hash of hashes)
      ends.push(
        await until(
          'the payment to end',
          () => rpc(a, 'get_payment', { payment_hash: hash }),
          (p) => p.status === 'Success' || p.status === 'Failed',
          90_000,
        ),
      );
    const after = await settledBalances();
    let paid = 0n;
    for (const [i, end] of ends.entries()) {
      const invoice = await rpc(b, 'get_invoice', { payment_hash: hashes[i] });
      if (end.status === 'Success') {
        expect(invoice.status).toBe('Paid');
        paid += amount;
      } else {
        expect(end.failed_error).toEqual(expect.any(String));
        expect(invoice.status).not.toBe('Paid');
      }
    }
    expect(ends.map((e) => e.status)).toContain('Success');
    expect(after).toEqual({ a: before.a - paid, b: before.b + paid });
  }, 180_000);
});
