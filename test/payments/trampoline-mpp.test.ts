/**
 * MPP through a trampoline over simulated channels, as the reference does it: the sender pays the
 * trampoline in one part (amount and budget) and tells it `max_parts` in the Forward payload; the
 * trampoline splits its own payment to the target, every part carrying the inner onion, and the
 * target gathers the parts by the MPP record of the inner Final payload. MPP allows one
 * trampoline only; a trampoline takes one incoming TLC per payment, so parts split before it are
 * refused (each pays less than the amount and budget: FeeInsufficient).
 */
import { describe, expect, it } from 'vitest';
import { bytesToHex } from '../../src/codec/hex.ts';
import { MPP_RECORD_KEY } from '../../src/payment/onion/hop-data.ts';
import { decodeErrorPacket } from '../../src/payment/onion/packet.ts';
import { peelTrampolineOnion } from '../../src/payment/onion/trampoline.ts';
import { PaymentStore } from '../../src/payment/store.ts';
import { buildNetwork, CKB, savedSession, waitFor } from './sim-network.ts';
import { invoice, network, sendToTrampoline } from './trampoline-net.ts';

const AMOUNT = 100n * CKB;
const BUDGET = 50_000_000n; // the default 5‰ cap of 100 CKB

/**
 * A–T (300 CKB) and two channels T–D of 60 CKB each: T reaches D in two parts only. A's graph
 * knows its channel to T alone.
 */
function split() {
  const net = buildNetwork();
  const A = net.addStack('A', 1);
  const T = net.addStack('T', 2);
  const D = net.addStack('D', 3);
  const at = net.connect(A, T, 1, 300n * CKB, 0n);
  const td1 = net.connect(T, D, 2, 60n * CKB, 0n);
  const td2 = net.connect(T, D, 3, 60n * CKB, 0n);
  for (const c of [td1, td2]) A.hidden.add(c.outpoint);
  return { net, A, T, D, at, td1, td2 };
}

describe('MPP through a trampoline over simulated channels', () => {
  it('pays an MPP invoice in one part to the trampoline, which splits its own payment to D', async () => {
    const { net, A, T, D } = split();
    const before = { A: net.balanceOf(A), T: net.balanceOf(T), D: net.balanceOf(D) };
    const inv = invoice(D, AMOUNT, { allowMpp: true });
    const sent = A.payments.send({
      invoice: inv.address,
      trampoline_hops: [T.pubkey],
      max_fee_amount: BUDGET,
    });
    // One part, to T, carrying the amount and the whole budget.
    expect(sent.routers).toHaveLength(1);
    expect(BigInt(sent.routers[0]!.nodes.at(-1)!.amount)).toBe(AMOUNT + BUDGET);
    await waitFor(() => A.payments.get(inv.hash).status === 'Success', 'payment success');
    expect(D.invoices.getInvoice(inv.hash).status).toBe('Paid');

    // T was told the sender's max_parts (the default 12), and split.
    const own = savedSession(T, inv.hash)!;
    expect(own).toMatchObject({
      status: 'Success',
      request: { maxParts: 12n, allowMpp: true, amount: AMOUNT },
    });
    const parts = own.attempts.filter((a) => a.status === 'Success');
    expect(parts).toHaveLength(2);
    expect(parts.reduce((x, a) => x + a.route.at(-1)!.amountReceived, 0n)).toBe(AMOUNT);
    expect(savedSession(A, inv.hash)!.attempts).toHaveLength(1);
    // T's parts went over its own channels: no route fee; T keeps the budget.
    expect(net.balanceOf(A)).toBe(before.A - AMOUNT - BUDGET);
    expect(net.balanceOf(T)).toBe(before.T + BUDGET);
    expect(net.balanceOf(D)).toBe(before.D + AMOUNT);
    expect(net.pendingTlcs()).toBe(0);
  });

  it("tells the trampoline the sender's max_parts, and D gathers by the inner MPP record", async () => {
    const { A, T, D } = split();
    const inv = invoice(D, AMOUNT, { allowMpp: true });
    A.payments.send({
      invoice: inv.address,
      trampoline_hops: [T.pubkey],
      max_fee_amount: BUDGET,
      max_parts: 2n,
    });
    await waitFor(() => A.payments.get(inv.hash).status === 'Success', 'payment success');
    const own = savedSession(T, inv.hash)!;
    expect(own.request.maxParts).toBe(2n);
    // What T hands on with every part: the inner onion whose Final payload names the total.
    const final = peelTrampolineOnion(
      Buffer.from(own.request.trampoline!.onion.slice(2), 'hex'),
      D.sk,
      Buffer.from(inv.hash.slice(2), 'hex'),
    ).payload;
    expect(final.type).toBe('Final');
    const record = final.type === 'Final' ? final.customRecords?.get(MPP_RECORD_KEY) : undefined;
    expect(record).toBeDefined();
  });

  it('fails, as the reference, an invoice without MPP the trampoline can only pay in parts', async () => {
    const { net, A, T, D } = split();
    const inv = invoice(D, AMOUNT);
    A.payments.send({ invoice: inv.address, trampoline_hops: [T.pubkey], max_fee_amount: BUDGET });
    await waitFor(() => A.payments.get(inv.hash).status === 'Failed', 'payment failed');
    expect(A.payments.get(inv.hash).failed_error).toBe('TemporaryNodeFailure');
    const own = savedSession(T, inv.hash)!;
    expect(own.request).toMatchObject({ maxParts: 1n, allowMpp: false });
    expect(own.failedError).toMatch(/^Send payment error: Failed to build route, /);
    expect(D.invoices.getInvoice(inv.hash).status).toBe('Open');
    await waitFor(() => net.pendingTlcs() === 0, 'no TLC left');
  });

  it('refuses MPP through more than one trampoline, with the reference text', () => {
    const { A, T, T2, D } = network();
    const inv = invoice(D, 10n * CKB, { allowMpp: true });
    expect(() =>
      A.payments.send({
        invoice: inv.address,
        trampoline_hops: [T.pubkey, T2.pubkey],
        max_fee_amount: 5_000_000n,
      }),
    ).toThrow(
      'InvalidParameter: Failed to validate payment request: "trampoline_hops must contain only one hop when MPP is enabled"',
    );
    // One part only (max_parts 1 is refused for an MPP invoice), so no MPP: refused as for any.
    expect(() =>
      A.payments.send({
        invoice: inv.address,
        trampoline_hops: [T.pubkey, T2.pubkey],
        max_fee_amount: 5_000_000n,
        max_parts: 1n,
      }),
    ).toThrow('invalid max_parts, value should be in range [1, 24]');
    expect(() => A.payments.get(inv.hash)).toThrow(/Payment session not found/);
  });

  it('does not gather parts split before the trampoline: each is refused with FeeInsufficient', async () => {
    const { net, A, T, D, at } = network();
    const amount = 10n * CKB;
    const budget = 5_000_000n;
    const inv = invoice(D, amount, { allowMpp: true });
    const before = net.balanceOf(A);
    const half = (amount + budget) / 2n;
    const first = await sendToTrampoline(A, T, D, inv.hash, at.outpoint, { amount: half, attemptId: 'p1' });
    const second = await sendToTrampoline(A, T, D, inv.hash, at.outpoint, { amount: half, attemptId: 'p2' });
    await waitFor(() => net.failures.length === 2, 'both refused');
    for (const [i, sent] of [first, second].entries()) {
      const decoded = decodeErrorPacket(net.failures[i]!.packet, sent.sharedSecrets);
      expect(decoded?.error.code).toBe('FeeInsufficient');
      expect(bytesToHex((decoded!.error.extra as { nodeId: Uint8Array }).nodeId, false)).toBe(T.pubkey);
    }
    // T started no payment of its own; nothing moved.
    expect(new PaymentStore(T.db).view(inv.hash)).toBeUndefined();
    expect(D.invoices.getInvoice(inv.hash).status).toBe('Open');
    expect(net.balanceOf(A)).toBe(before);
    expect(net.pendingTlcs()).toBe(0);
  });
});
