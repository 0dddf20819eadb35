/**
 * Trampoline routing over simulated channels (the codec is tested in test/payment/trampoline.test.ts).
 * The sender knows only its channel to the trampoline; the trampoline knows the rest of the
 * network, peels the inner onion, pays the next node itself within the budget it was given, and
 * settles the incoming TLC with the outcome. Balances move by exactly the amount, the budget and
 * the fees; the reference's guards and texts hold.
 */
import { describe, expect, it } from 'vitest';
import { decodeErrorPacket } from '../../src/payment/onion/packet.ts';
import { PaymentStore } from '../../src/payment/store.ts';
import {
  checkTrampolineFinal,
  checkTrampolineForward,
  estimateTrampolineFee,
  planTrampoline,
  splitTrampolineFees,
  TRAMPOLINE_FEE_INSUFFICIENT,
  trampolineBudgetLeft,
  trampolineFailureCode,
  trampolineForwardAcceptable,
} from '../../src/payment/trampoline.ts';
import { fee, savedSession, waitFor } from './sim-network.ts';
import { AMOUNT, BUDGET, invoice, network, sendToTrampoline } from './trampoline-net.ts';

describe('trampoline rules', () => {
  it('splits the budget evenly, the first hops taking the remainder; a zero share is refused', () => {
    expect(splitTrampolineFees(10n, 3)).toEqual([4n, 3n, 3n]);
    expect(() => splitTrampolineFees(1n, 2)).toThrow(
      'max_fee_amount is too low for trampoline routing: fee for a trampoline hop is zero',
    );
    // 1000 ppm per hop, applied backwards.
    expect(estimateTrampolineFee(AMOUNT, 1)).toBe(fee(AMOUNT));
    expect(estimateTrampolineFee(AMOUNT, 2)).toBe(fee(AMOUNT) + fee(AMOUNT + fee(AMOUNT)));
  });

  it('plans each hop: amount to forward, budget, expiry delta (+4 h per trampoline after it)', () => {
    const hops = ['02'.padEnd(66, '1'), '03'.padEnd(66, '2')];
    const plan = planTrampoline({
      hops,
      target: '02'.padEnd(66, '3'),
      finalAmount: AMOUNT,
      maxFeeAmount: BUDGET + 1n,
      finalTlcExpiryDelta: 86_400_000n,
      tlcExpiryLimit: 1_209_600_000n,
      hashAlgorithm: 0,
      paymentPreimage: null,
      customRecords: null,
    });
    expect(plan.amountToFirst).toBe(AMOUNT + BUDGET + 1n);
    expect(plan.outerFinalDelta).toBe(86_400_000n + 2n * 14_400_000n);
    expect(plan.payloads).toMatchObject([
      {
        type: 'Forward',
        amountToForward: AMOUNT + 2_500_000n,
        buildMaxFeeAmount: 2_500_001n,
        tlcExpiryDelta: 100_800_000n,
      },
      {
        type: 'Forward',
        amountToForward: AMOUNT,
        buildMaxFeeAmount: 2_500_000n,
        tlcExpiryDelta: 86_400_000n,
      },
      { type: 'Final', finalAmount: AMOUNT, finalTlcExpiryDelta: 86_400_000n },
    ]);
    const forward = plan.payloads[0] as Extract<(typeof plan.payloads)[0], { type: 'Forward' }>;
    expect(checkTrampolineForward(AMOUNT + BUDGET + 1n, forward)).toBeNull();
    expect(checkTrampolineForward(AMOUNT + BUDGET, forward)).toBe('InvalidOnionPayload');
    expect(checkTrampolineForward(AMOUNT + 2_500_000n, forward)).toBe('FeeInsufficient');
    expect(checkTrampolineFinal(AMOUNT, AMOUNT, AMOUNT)).toBe(true);
    expect(checkTrampolineFinal(AMOUNT, AMOUNT + 1n, AMOUNT)).toBe(false);
  });
});

describe("a trampoline's own payment", () => {
  it('spends its budget on its own fee first, then the route (the reference texts otherwise)', () => {
    expect(trampolineBudgetLeft(100n, 30n, 50n)).toBe(20n);
    expect(trampolineBudgetLeft(100n, 100n, 0n)).toBe(0n);
    expect(() => trampolineBudgetLeft(100n, 101n, 0n)).toThrow(TRAMPOLINE_FEE_INSUFFICIENT);
    expect(() => trampolineBudgetLeft(100n, 30n, 71n)).toThrow(
      'Send payment error: max_fee_amount is too low for selected route',
    );
  });

  it("fails upstream with the session's last error code, else TemporaryNodeFailure", () => {
    expect(
      trampolineFailureCode({ lastErrorCode: 'InvoiceCancelled', failedError: 'InvoiceCancelled' }),
    ).toBe('InvoiceCancelled');
    expect(trampolineFailureCode({ failedError: TRAMPOLINE_FEE_INSUFFICIENT })).toBe('FeeInsufficient');
    // Retryable failures leave no code: out of tries, or no route left.
    expect(trampolineFailureCode({ failedError: 'TemporaryChannelFailure' })).toBe('TemporaryNodeFailure');
    expect(trampolineFailureCode({ failedError: 'Send payment error: Failed to build route, x' })).toBe(
      'TemporaryNodeFailure',
    );
    expect(trampolineFailureCode({ lastErrorCode: 'not a code', failedError: null })).toBe(
      'TemporaryNodeFailure',
    );
  });

  it("accepts a Forward payload the reference's payment builder would", () => {
    const ok = {
      type: 'Forward' as const,
      nextNodeId: new Uint8Array(33),
      amountToForward: AMOUNT,
      hashAlgorithm: 0 as const,
      buildMaxFeeAmount: BUDGET,
      tlcExpiryDelta: 86_400_000n,
      tlcExpiryLimit: 1_209_600_000n,
      maxParts: null,
    };
    expect(trampolineForwardAcceptable(ok)).toBe(true);
    expect(trampolineForwardAcceptable({ ...ok, maxParts: 24n })).toBe(true);
    expect(trampolineForwardAcceptable({ ...ok, maxParts: 25n })).toBe(false);
    expect(trampolineForwardAcceptable({ ...ok, maxParts: 0n })).toBe(false);
    expect(trampolineForwardAcceptable({ ...ok, amountToForward: 0n })).toBe(false);
    expect(trampolineForwardAcceptable({ ...ok, tlcExpiryDelta: 9_599_999n })).toBe(false);
    // A node on short epochs takes its own least delta (2/3 of a 2-second epoch: 1,333 ms).
    expect(trampolineForwardAcceptable({ ...ok, tlcExpiryDelta: 1333n }, 1333n)).toBe(true);
    expect(trampolineForwardAcceptable({ ...ok, tlcExpiryDelta: 1332n }, 1333n)).toBe(false);
    expect(trampolineForwardAcceptable({ ...ok, tlcExpiryLimit: 86_399_999n })).toBe(false);
    expect(trampolineForwardAcceptable({ ...ok, tlcExpiryLimit: 1_209_600_001n })).toBe(false);
  });
});

describe('paying through trampolines over simulated channels', () => {
  it('reaches a node the sender has no route to, through one trampoline that knows the way', async () => {
    const { net, A, T, B, D } = network();
    const before = { A: net.balanceOf(A), T: net.balanceOf(T), B: net.balanceOf(B), D: net.balanceOf(D) };
    const inv = invoice(D);
    expect(() => A.payments.send({ invoice: inv.address })).toThrow(
      /^Send payment error: Failed to build route, /,
    );

    const sent = A.payments.send({
      invoice: inv.address,
      trampoline_hops: [T.pubkey],
      max_fee_amount: BUDGET,
    });
    // The outer route ends at the trampoline, carrying the amount and the whole budget.
    expect(sent.routers[0]!.nodes.map((n) => n.pubkey)).toEqual([A.pubkey, T.pubkey]);
    expect(BigInt(sent.routers[0]!.nodes.at(-1)!.amount)).toBe(AMOUNT + BUDGET);
    expect(BigInt(sent.fee)).toBe(BUDGET);
    await waitFor(() => A.payments.get(inv.hash).status === 'Success', 'payment success');
    expect(D.invoices.getInvoice(inv.hash).status).toBe('Paid');

    // T paid B's fee on what D receives, and kept the rest of the budget.
    const bFee = fee(AMOUNT);
    expect(net.balanceOf(A)).toBe(before.A - AMOUNT - BUDGET);
    expect(net.balanceOf(B)).toBe(before.B + bFee);
    expect(net.balanceOf(T)).toBe(before.T + BUDGET - bFee);
    expect(net.balanceOf(D)).toBe(before.D + AMOUNT);
    expect(net.pendingTlcs()).toBe(0);
    // T's own payment session, and its incoming TLC settled.
    const own = savedSession(T, inv.hash)!;
    expect(own).toMatchObject({ status: 'Success', request: { targetPubkey: D.pubkey, amount: AMOUNT } });
    expect(own.request.trampoline?.upstreamSettled).toBe(true);
    // Settled, the store keeps its compact form: what it paid, to whom, and the preimage.
    expect(new PaymentStore(T.db).get(inv.hash)).toBeUndefined();
    expect(new PaymentStore(T.db).settled(inv.hash)).toMatchObject({
      status: 'Success',
      targetPubkey: D.pubkey,
      amount: AMOUNT,
      preimage: own.preimage,
      tries: own.attempts.length,
    });
  });

  it('goes through two trampolines, each within its share of the budget', async () => {
    const { net, A, T, T2, D } = network();
    const before = { A: net.balanceOf(A), D: net.balanceOf(D) };
    const inv = invoice(D);
    A.payments.send({ invoice: inv.address, trampoline_hops: [T.pubkey, T2.pubkey], max_fee_amount: BUDGET });
    await waitFor(() => A.payments.get(inv.hash).status === 'Success', 'payment success');
    expect(net.balanceOf(A)).toBe(before.A - AMOUNT - BUDGET);
    expect(net.balanceOf(D)).toBe(before.D + AMOUNT);
    expect(savedSession(T, inv.hash)!.request).toMatchObject({
      targetPubkey: T2.pubkey,
      amount: AMOUNT + BUDGET / 2n,
      maxFeeAmount: BUDGET / 2n,
    });
    expect(savedSession(T2, inv.hash)!.request.targetPubkey).toBe(D.pubkey);
    expect(net.pendingTlcs()).toBe(0);
  });

  it('pays a keysend through a trampoline: the preimage travels in the inner Final payload', async () => {
    const { net, A, T, D } = network();
    const before = net.balanceOf(D);
    const sent = A.payments.send({
      target_pubkey: D.pubkey,
      amount: AMOUNT,
      keysend: true,
      trampoline_hops: [T.pubkey],
      max_fee_amount: BUDGET,
    });
    await waitFor(() => A.payments.get(sent.payment_hash).status === 'Success', 'keysend success');
    expect(net.balanceOf(D)).toBe(before + AMOUNT);
  });

  it('fails back, readable by the sender, when every route the trampoline tries fails', async () => {
    const { net, A, T, D, bd } = network();
    bd.refuse = 1_000; // the only way to D is closed
    const inv = invoice(D);
    const before = net.balanceOf(A);
    A.payments.send({ invoice: inv.address, trampoline_hops: [T.pubkey], max_fee_amount: BUDGET });
    await waitFor(() => A.payments.get(inv.hash).status === 'Failed', 'payment failed');
    // T's failures were all retryable, so its session has no last error code: the reference's
    // TemporaryNodeFailure, naming no node, and A does not try again.
    expect(A.payments.get(inv.hash).failed_error).toBe('TemporaryNodeFailure');
    expect(savedSession(A, inv.hash)!.attempts).toHaveLength(1);
    expect(savedSession(T, inv.hash)!.attempts.length).toBeGreaterThan(1);
    expect(savedSession(T, inv.hash)!.request.trampoline?.upstreamSettled).toBe(true);
    expect(net.balanceOf(A)).toBe(before);
    expect(net.pendingTlcs()).toBe(0);
  });

  it('refuses a budget that does not match, at the trampoline (InvalidOnionPayload)', async () => {
    const { net, A, T, D, at } = network();
    const inv = invoice(D);
    const sent = A.payments.send({
      invoice: inv.address,
      trampoline_hops: [T.pubkey],
      max_fee_amount: BUDGET,
      dry_run: true,
    });
    expect(BigInt(sent.fee)).toBe(BUDGET);
    // A plans with one budget but its TLC delivers one shannon less to T.
    const session = await sendToTrampoline(A, T, D, inv.hash, at.outpoint, { amount: AMOUNT + BUDGET - 1n });
    await waitFor(() => net.failures.length > 0, 'the refusal');
    const packet = net.failures.at(-1)!.packet;
    expect(decodeErrorPacket(packet, session.sharedSecrets)!.error.code).toBe('InvalidOnionPayload');
  });

  it('pays a UDT through a trampoline, onward in the same token', async () => {
    const { net, A, T, D, at, tb, bd } = network();
    const udt = { code_hash: `0x${'ab'.repeat(32)}`, hash_type: 'type', args: '0x0102' };
    for (const c of [at, tb, bd]) c.udt = udt;
    const before = { A: net.balanceOf(A), D: net.balanceOf(D) };
    const sent = A.payments.send({
      target_pubkey: D.pubkey,
      amount: AMOUNT,
      keysend: true,
      udt_type_script: udt,
      trampoline_hops: [T.pubkey],
      max_fee_amount: BUDGET,
    });
    await waitFor(() => A.payments.get(sent.payment_hash).status === 'Success', 'UDT payment success');
    expect(savedSession(T, sent.payment_hash)!.request.udtTypeScript).toEqual(udt);
    expect(net.balanceOf(A)).toBe(before.A - AMOUNT - BUDGET);
    expect(net.balanceOf(D)).toBe(before.D + AMOUNT);
    expect(net.pendingTlcs()).toBe(0);
  });

  it('fails at the trampoline a UDT payment it has no route for in that token', async () => {
    const { net, A, T, D, at } = network();
    at.udt = { code_hash: `0x${'ab'.repeat(32)}`, hash_type: 'type', args: '0x0102' };
    const before = net.balanceOf(A);
    const sent = A.payments.send({
      target_pubkey: D.pubkey,
      amount: AMOUNT,
      keysend: true,
      udt_type_script: at.udt,
      trampoline_hops: [T.pubkey],
      max_fee_amount: BUDGET,
    });
    await waitFor(() => A.payments.get(sent.payment_hash).status === 'Failed', 'payment failed');
    expect(A.payments.get(sent.payment_hash).failed_error).toBe('TemporaryNodeFailure');
    expect(net.balanceOf(A)).toBe(before);
    expect(net.pendingTlcs()).toBe(0);
  });

  it('routes only through hops that announce trampoline routing (or announced nothing)', async () => {
    const { net, A, T, T2, D } = network();
    const inv = invoice(D);
    const send = () =>
      A.payments.send({
        invoice: inv.address,
        trampoline_hops: [T.pubkey, T2.pubkey],
        max_fee_amount: BUDGET,
      });
    // T2 announced GOSSIP_QUERIES and BASIC_MPP only.
    net.announce(T2, new Uint8Array([0x05]));
    expect(send).toThrow(
      'Send payment error: Failed to build route, Feature not enabled: invalid trampoline_hops: a hop does not support trampoline routing',
    );
    // On record as Failed, as any payment whose route cannot be built (the reference stores it too);
    // it may be sent again.
    expect(A.payments.get(inv.hash).status).toBe('Failed');
    expect(A.payments.get(inv.hash).failed_error).toMatch(/a hop does not support trampoline routing$/);
    // The optional bit is enough; T, which announced nothing, counts as supporting it.
    net.announce(T2, new Uint8Array([0x25]));
    send();
    await waitFor(() => A.payments.get(inv.hash).status === 'Success', 'payment success');
  });

  it('refuses, with the reference texts, what trampoline routing cannot do', () => {
    const { A, T, B, D, T2 } = network();
    const inv = invoice(D);
    const bad = (reason: string) => `InvalidParameter: Failed to validate payment request: "${reason}"`;
    const send = (extra: object) => () =>
      A.payments.send({ invoice: inv.address, max_fee_amount: BUDGET, ...extra });
    expect(send({ trampoline_hops: [] })).toThrow(bad('trampoline_hops must be non-empty when provided'));
    expect(send({ trampoline_hops: [T, B, T2, A, D, T].map((s) => s.pubkey) })).toThrow(
      bad('too many trampoline_hops, at most 5'),
    );
    expect(send({ trampoline_hops: [T.pubkey, D.pubkey] })).toThrow(
      bad('trampoline_hops must not contain target_pubkey'),
    );
    expect(send({ trampoline_hops: [T.pubkey, T.pubkey] })).toThrow(
      bad('trampoline_hops must not contain duplicates'),
    );
    expect(() => A.payments.send({ invoice: inv.address, trampoline_hops: [T.pubkey] })).toThrow(
      bad('max_fee_amount must be set when trampoline_hops is provided'),
    );
    expect(send({ trampoline_hops: [A.pubkey] })).toThrow(
      'Send payment error: Failed to build route, Feature not enabled: invalid trampoline_hops: first hop must not be source/target',
    );
    expect(send({ trampoline_hops: [T.pubkey], allow_self_payment: true })).toThrow(
      bad('allow_self_payment cannot be enabled with trampoline routing'),
    );
    expect(send({ trampoline_hops: [T.pubkey], max_fee_amount: 100n })).toThrow(
      `Send payment error: Failed to build route, Graph other error: max_fee_amount is too low for trampoline routing: recommend_minimal_fee=${fee(AMOUNT)}, maximal_fee=${10n * fee(AMOUNT)} current_fee=100`,
    );
    // Route building failed: on record as Failed with that reason, as the reference stores it.
    const failed = A.payments.get(inv.hash);
    expect(failed.status).toBe('Failed');
    expect(failed.failed_error).toMatch(/max_fee_amount is too low for trampoline routing/);
  });
});
