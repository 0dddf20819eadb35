/**
 * Payment sessions survive a crash of the sender: its payment stack is rebuilt over the same
 * database (`restart`) at each point a kill could cut it — after the attempt was saved but
 * before its TLC was offered, after the channel took the TLC but before it was linked, with the
 * TLC in flight, after the outcome was recorded but before the session took it, and after the
 * TLC vanished with nothing recorded. Each payment ends Success or Failed, is never paid twice,
 * and balances move exactly once. The reconciliation rules themselves are tested directly.
 */
import { describe, expect, it } from 'vitest';
import { bytesToHex } from '../../src/codec/hex.ts';
import {
  attemptFate,
  NEVER_SENT_ERROR,
  reconcileSession,
  UNKNOWN_OUTCOME_ERROR,
} from '../../src/payment/resume.ts';
import type { Attempt, PaymentSession } from '../../src/payment/session.ts';
import {
  buildNetwork,
  CKB,
  diamond,
  fee,
  outpoint,
  type Stack,
  savedSession,
  waitFor,
} from './sim-network.ts';

/** A–B–D: one route. */
function line() {
  const net = buildNetwork();
  const A = net.addStack('A', 1);
  const B = net.addStack('B', 2);
  const D = net.addStack('D', 4);
  net.connect(A, B, 1, 100n * CKB, 100n * CKB);
  net.connect(B, D, 2, 500n * CKB, 0n);
  return { net, A, B, D };
}

function invoice(D: Stack, amount: bigint, allowMpp = false) {
  const { invoiceAddress, invoice } = D.invoices.newInvoice({ amount, currency: 'Fibd', allowMpp });
  return { address: invoiceAddress, hash: bytesToHex(invoice.data.paymentHash) };
}

const session = (s: Stack, hash: string) => savedSession(s, hash)!;
const statuses = (s: Stack, hash: string) => session(s, hash).attempts.map((a) => a.status);

describe('the reconciliation rules', () => {
  it('judges an attempt from its link, its recorded outcome and the channel', () => {
    const e = { linked: false, outcomeRecorded: false, inChannel: false };
    expect(attemptFate(e)).toBe('neverSent');
    expect(attemptFate({ ...e, inChannel: true })).toBe('inflight');
    expect(attemptFate({ ...e, linked: true, inChannel: true })).toBe('inflight');
    expect(attemptFate({ ...e, linked: true, outcomeRecorded: true })).toBe('resolving');
    expect(attemptFate({ ...e, linked: true })).toBe('unknown');
  });

  const attempt = (id: string, status: Attempt['status'] = 'Inflight'): Attempt => ({
    id,
    n: 1,
    status,
    route: [{ target: '02', channelOutpoint: outpoint(1), amountReceived: 10n }],
    fee: 1n,
    sharedSecrets: [],
    error: null,
  });
  const base = (attempts: Attempt[], status: PaymentSession['status'] = 'Inflight'): PaymentSession =>
    ({
      paymentHash: '0x01',
      status,
      createdAt: 1,
      lastUpdatedAt: 1,
      failedError: null,
      fee: 1n,
      request: { amount: 10n, maxParts: 1n, keysend: false } as never,
      attempts,
      tryLimit: 5,
      preimage: null,
    }) as PaymentSession;

  it('fails what never left (to be sent again), fails the session for an unknown outcome', () => {
    const never = reconcileSession(base([attempt('a')], 'Created'), () => 'neverSent', 9);
    expect(never.changed).toBe(true);
    expect(never.session).toMatchObject({
      status: 'Created',
      failedError: NEVER_SENT_ERROR,
      lastUpdatedAt: 9,
    });
    expect(never.session.attempts[0]).toMatchObject({ status: 'Failed', error: NEVER_SENT_ERROR });

    const lost = reconcileSession(
      base([attempt('a'), attempt('b')]),
      (a) => (a.id === 'a' ? 'unknown' : 'inflight'),
      9,
    );
    expect(lost.session).toMatchObject({ status: 'Failed', failedError: UNKNOWN_OUTCOME_ERROR });
    expect(lost.session.attempts.map((a) => a.status)).toEqual(['Failed', 'Inflight']);

    const waiting = reconcileSession(base([attempt('a')], 'Created'), () => 'inflight', 9);
    expect(waiting).toMatchObject({ changed: true, session: { status: 'Inflight' } });
    const quiet = reconcileSession(base([attempt('a', 'Failed'), attempt('b')]), () => 'resolving', 9);
    expect(quiet.changed).toBe(false);
  });
});

describe('a sender restarted at each point of a payment', () => {
  it('sends again an attempt saved but never offered to the channel', async () => {
    const { net, A, D } = line();
    const before = net.balanceOf(A);
    const inv = invoice(D, 10n * CKB);
    A.faults.hangAfterSends = 0;
    expect(A.payments.send({ invoice: inv.address }).status).toBe('Created');
    expect(net.pendingTlcs()).toBe(0);
    net.restart(A);
    await waitFor(() => A.payments.get(inv.hash).status === 'Success', 'payment success');
    expect(statuses(A, inv.hash)).toEqual(['Failed', 'Success']);
    expect(session(A, inv.hash).attempts[0]!.error).toBe(NEVER_SENT_ERROR);
    expect(D.invoices.getInvoice(inv.hash).status).toBe('Paid');
    expect(net.balanceOf(A)).toBe(before - 10n * CKB - fee(10n * CKB));
    expect(net.pendingTlcs()).toBe(0);
  });

  it('follows a TLC the channel took before it was linked, found by its onion', async () => {
    const { net, A, D } = line();
    const before = net.balanceOf(A);
    const inv = invoice(D, 10n * CKB);
    net.pause();
    A.faults.addThenHang = true;
    A.payments.send({ invoice: inv.address });
    await waitFor(() => net.pendingTlcs() === 1, 'the TLC in the channel');
    expect(A.links.ofAttempt(session(A, inv.hash).attempts[0]!.id)).toBeUndefined();
    net.restart(A);
    expect(A.payments.get(inv.hash).status).toBe('Inflight');
    net.resume();
    await waitFor(() => A.payments.get(inv.hash).status === 'Success', 'payment success');
    expect(statuses(A, inv.hash)).toEqual(['Success']);
    expect(net.balanceOf(A)).toBe(before - 10n * CKB - fee(10n * CKB));
  });

  it('keeps waiting for a TLC in flight: no second attempt', async () => {
    const { net, A, D } = line();
    const inv = invoice(D, 10n * CKB);
    net.pause();
    A.payments.send({ invoice: inv.address });
    await A.payments.settled(inv.hash);
    net.restart(A);
    await A.payments.settled(inv.hash);
    expect(A.payments.get(inv.hash).status).toBe('Inflight');
    expect(statuses(A, inv.hash)).toEqual(['Inflight']);
    net.resume();
    await waitFor(() => A.payments.get(inv.hash).status === 'Success', 'payment success');
    expect(statuses(A, inv.hash)).toEqual(['Success']);
  });

  it('finishes with an outcome recorded before the crash (fulfilled, and failed then retried)', async () => {
    const { net, A, D, bd } = diamond();
    const inv = invoice(D, 10n * CKB);
    A.faults.outcome = 'recordOnly';
    A.payments.send({ invoice: inv.address });
    await waitFor(() => A.links.outcomes().length === 1, 'the outcome recorded');
    expect(A.payments.get(inv.hash).status).toBe('Inflight');
    net.restart(A);
    await waitFor(() => A.payments.get(inv.hash).status === 'Success', 'payment success');
    expect(session(A, inv.hash).preimage).not.toBeNull();
    expect(A.links.outcomes()).toEqual([]);

    // B refuses the next forward: the failure is recorded, and taken after the restart.
    const again = invoice(D, 10n * CKB);
    bd.refuse = 1;
    A.faults.outcome = 'recordOnly';
    A.payments.send({ invoice: again.address });
    await waitFor(() => A.links.outcomes().length === 1, 'the failure recorded');
    net.restart(A);
    await waitFor(() => A.payments.get(again.hash).status === 'Success', 'retried payment success');
    expect(statuses(A, again.hash)).toEqual(['Failed', 'Success']);
    expect(session(A, again.hash).attempts[0]!.error).toBe('TemporaryChannelFailure');
    expect(net.pendingTlcs()).toBe(0);
  });

  it('never sends again an attempt whose TLC vanished with no outcome recorded', async () => {
    const { net, A, D } = line();
    const before = net.balanceOf(A);
    const inv = invoice(D, 10n * CKB);
    A.faults.outcome = 'drop';
    A.payments.send({ invoice: inv.address });
    await waitFor(() => D.invoices.getInvoice(inv.hash).status === 'Paid' && net.pendingTlcs() === 0, 'paid');
    net.restart(A);
    await A.payments.settled(inv.hash);
    expect(A.payments.get(inv.hash)).toMatchObject({ status: 'Failed', failed_error: UNKNOWN_OUTCOME_ERROR });
    expect(statuses(A, inv.hash)).toEqual(['Failed']);
    expect(net.balanceOf(A)).toBe(before - 10n * CKB - fee(10n * CKB));
  });

  it('keeps the try limit across the restart (a router payment tries once)', async () => {
    const { net, A, B, D } = line();
    const inv = invoice(D, 10n * CKB);
    const first = 10n * CKB + fee(10n * CKB);
    const [ab, bd] = [outpoint(1), outpoint(2)];
    A.faults.hangAfterSends = 0;
    A.payments.sendWithRouter({ invoice: inv.address }, [
      { target: B.pubkey, channelOutpoint: ab, amountReceived: first, incomingTlcExpiry: 100_800_000 },
      { target: D.pubkey, channelOutpoint: bd, amountReceived: 10n * CKB, incomingTlcExpiry: 86_400_000 },
    ]);
    net.restart(A);
    await A.payments.settled(inv.hash);
    expect(A.payments.get(inv.hash)).toMatchObject({ status: 'Failed', failed_error: NEVER_SENT_ERROR });
    expect(statuses(A, inv.hash)).toEqual(['Failed']);
    expect(net.pendingTlcs()).toBe(0);
  });

  it('sends again the MPP part that never left, while the other keeps going', async () => {
    const { net, A, D } = diamond();
    const before = { A: net.balanceOf(A), D: net.balanceOf(D) };
    const inv = invoice(D, 100n * CKB, true);
    A.faults.hangAfterSends = 1;
    expect(A.payments.send({ invoice: inv.address }).routers).toHaveLength(2);
    await waitFor(() => net.pendingTlcs() >= 1, 'the first part in flight');
    net.restart(A);
    await waitFor(() => A.payments.get(inv.hash).status === 'Success', 'payment success');
    const s = session(A, inv.hash);
    expect(s.attempts.map((a) => a.status)).toEqual(['Success', 'Failed', 'Success']);
    const paid = s.attempts.filter((a) => a.status === 'Success');
    const fees = paid.reduce((x, a) => x + a.fee, 0n);
    expect(BigInt(A.payments.get(inv.hash).fee)).toBe(fees);
    expect(net.balanceOf(D)).toBe(before.D + 100n * CKB);
    expect(net.balanceOf(A)).toBe(before.A - 100n * CKB - fees);
    expect(net.pendingTlcs()).toBe(0);
  });

  it('a forwarding node restarted after the downstream fulfil passes the preimage back', async () => {
    const { net, A, B, D } = line();
    const beforeB = net.balanceOf(B);
    const inv = invoice(D, 10n * CKB);
    B.faults.outcome = 'recordOnly';
    A.payments.send({ invoice: inv.address });
    await waitFor(() => B.links.outcomes().length === 1, 'B recorded the fulfil');
    expect(A.payments.get(inv.hash).status).toBe('Inflight');
    net.restart(B);
    await waitFor(() => A.payments.get(inv.hash).status === 'Success', 'payment success');
    expect(net.balanceOf(B)).toBe(beforeB + fee(10n * CKB));
    expect(B.links.outcomes()).toEqual([]);
  });
});
