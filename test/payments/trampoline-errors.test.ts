/**
 * Failures past a trampoline, over simulated channels, as the reference handles them: the
 * trampoline's own payment session ends Failed (on record at the trampoline), and it fails its
 * incoming TLC with the session's last error code — the failure no route could fix, or
 * FeeInsufficient when its budget does not cover its own fee — else TemporaryNodeFailure, in an
 * error naming no node. The sender reads that code as its `failed_error` and does not try again
 * (the reference's `record_payment_fail` stops on an erring node outside the route). Nothing moves.
 */
import { describe, expect, it } from 'vitest';
import { bytesToHex, hexToBytes } from '../../src/codec/hex.ts';
import { decodeErrorPacket } from '../../src/payment/onion/packet.ts';
import { PaymentStore } from '../../src/payment/store.ts';
import { fee, savedSession, waitFor } from './sim-network.ts';
import { AMOUNT, BUDGET, invoice, network, sendToTrampoline } from './trampoline-net.ts';

type Net = ReturnType<typeof network>;

/** A pays D's invoice through T; resolves once A's payment ended Failed. */
async function payThroughT(n: Net, extra: object = {}, inv = invoice(n.D)) {
  const before = { A: n.net.balanceOf(n.A), T: n.net.balanceOf(n.T) };
  n.A.payments.send({
    invoice: inv.address,
    trampoline_hops: [n.T.pubkey],
    max_fee_amount: BUDGET,
    ...extra,
  });
  await waitFor(() => n.A.payments.get(inv.hash).status === 'Failed', 'payment failed');
  const own = savedSession(n.T, inv.hash)!;
  await waitFor(() => n.net.pendingTlcs() === 0, 'no TLC left');
  // Nothing moved, A tried once, T's session ended and its incoming TLC was failed.
  expect(n.net.balanceOf(n.A)).toBe(before.A);
  expect(n.net.balanceOf(n.T)).toBe(before.T);
  expect(savedSession(n.A, inv.hash)!.attempts).toHaveLength(1);
  expect(own.status).toBe('Failed');
  expect(savedSession(n.T, inv.hash)!.request.trampoline?.upstreamSettled).toBe(true);
  // Its incoming TLC settled, T's session is a settled payment in the store.
  expect(new PaymentStore(n.T.db).settled(inv.hash)?.status).toBe('Failed');
  return { sender: n.A.payments.get(inv.hash), trampoline: own, hash: inv.hash };
}

describe('failures past a trampoline reach the sender as the reference sends them', () => {
  it('no route from the trampoline to the target: TemporaryNodeFailure, no retry', async () => {
    const n = network();
    n.T.hidden.add(n.bd.outpoint); // T knows no way to D
    const { sender, trampoline } = await payThroughT(n);
    expect(sender.failed_error).toBe('TemporaryNodeFailure');
    // T's session never sent a TLC: it failed building its route, as the reference's does.
    expect(trampoline.attempts).toHaveLength(0);
    expect(trampoline.failedError).toMatch(/^Send payment error: Failed to build route, /);
    // The error A got names no node and carries the plain code.
    const packet = n.net.failures.at(-1)!.packet;
    const session = savedSession(n.A, sender.payment_hash)!;
    const decoded = decodeErrorPacket(
      packet,
      session.attempts[0]!.sharedSecrets.map((x) => hexToBytes(x)),
    );
    expect(decoded?.error).toEqual({ code: 'TemporaryNodeFailure', extra: null });
  });

  it("the expiry budget too small for the trampoline's route: TemporaryNodeFailure", async () => {
    const n = network();
    n.T.hidden.add(n.tb.outpoint); // T's only way to D is T→T2→B→D, two hops' deltas
    // Enough for A's route to T (the final delta and one trampoline's 4 h), not for T's.
    const limit = 9_600_000n + 14_400_000n + 1n;
    const { sender, trampoline } = await payThroughT(n, { tlc_expiry_limit: limit });
    expect(sender.failed_error).toBe('TemporaryNodeFailure');
    expect(trampoline.request.tlcExpiryLimit).toBe(limit);
    expect(trampoline.failedError).toMatch(/^Send payment error: Failed to build route, /);
  });

  it("the budget below the trampoline's own fee on its first channel: FeeInsufficient", async () => {
    const n = network();
    // The least budget A may give (1000 ppm of the amount); T's first hop carries B's fee too.
    const { sender, trampoline } = await payThroughT(n, { max_fee_amount: fee(AMOUNT) });
    expect(fee(AMOUNT + fee(AMOUNT))).toBeGreaterThan(fee(AMOUNT));
    expect(trampoline.failedError).toBe('Send payment error: Trampoline forwarding fee insufficient');
    expect(sender.failed_error).toBe('FeeInsufficient');
  });

  it("the budget covering the trampoline's fee but not the route's: TemporaryNodeFailure", async () => {
    const n = network();
    const local = fee(AMOUNT + fee(AMOUNT));
    const { sender, trampoline } = await payThroughT(n, { max_fee_amount: local + 10n });
    expect(trampoline.failedError).toBe('Send payment error: max_fee_amount is too low for selected route');
    expect(sender.failed_error).toBe('TemporaryNodeFailure');
  });

  it('the target refusing the payment: its code, passed on by the trampoline', async () => {
    const n = network();
    // A payment hash D knows nothing of (no invoice, no keysend preimage).
    const hash = bytesToHex(new Uint8Array(32).fill(7));
    n.A.payments.send({
      target_pubkey: n.D.pubkey,
      amount: AMOUNT,
      payment_hash: hash,
      trampoline_hops: [n.T.pubkey],
      max_fee_amount: BUDGET,
    });
    await waitFor(() => n.A.payments.get(hash).status === 'Failed', 'payment failed');
    // A failure at the target no route fixes: T's last error code, and so A's.
    const own = savedSession(n.T, hash)!;
    expect(own).toMatchObject({ failedError: 'IncorrectOrUnknownPaymentDetails' });
    expect(own.attempts).toHaveLength(1);
    expect(n.A.payments.get(hash).failed_error).toBe('IncorrectOrUnknownPaymentDetails');
    expect(savedSession(n.A, hash)!.attempts).toHaveLength(1);
    await waitFor(() => n.net.pendingTlcs() === 0, 'no TLC left');
  });

  it('a payment failed past the trampoline may be sent again, and then succeeds', async () => {
    const n = network();
    n.T.hidden.add(n.bd.outpoint);
    const inv = invoice(n.D);
    await payThroughT(n, {}, inv);
    n.T.hidden.delete(n.bd.outpoint); // T learns the way
    n.A.payments.send({ invoice: inv.address, trampoline_hops: [n.T.pubkey], max_fee_amount: BUDGET });
    await waitFor(() => n.A.payments.get(inv.hash).status === 'Success', 'payment success');
    expect(n.D.invoices.getInvoice(inv.hash).status).toBe('Paid');
    expect(savedSession(n.T, inv.hash)!.status).toBe('Success');
  });

  it('a Forward payload the trampoline cannot make a payment of: TemporaryNodeFailure from T', async () => {
    const { net, A, T, D, at } = network();
    const inv = invoice(D);
    // 25 parts, one more than the reference's limit: its payment builder refuses the request.
    const sent = await sendToTrampoline(A, T, D, inv.hash, at.outpoint, {
      amount: AMOUNT + BUDGET,
      maxParts: 25n,
    });
    await waitFor(() => net.failures.length > 0, 'the refusal');
    const decoded = decodeErrorPacket(net.failures.at(-1)!.packet, sent.sharedSecrets);
    expect(decoded?.error.code).toBe('TemporaryNodeFailure');
    expect(decoded?.error.extra).toMatchObject({ type: 'NodeFailed' });
    expect(bytesToHex((decoded!.error.extra as { nodeId: Uint8Array }).nodeId, false)).toBe(T.pubkey);
    expect(new PaymentStore(T.db).view(inv.hash)).toBeUndefined();
  });
});
