/**
 * Received TLCs survive a crash: a node killed after its channel committed an incoming TLC but
 * before its relay handled it (`Faults.dropIncoming`) handles that TLC on restart as if it had
 * just arrived — a forwarding node forwards it, a final node settles it (or holds it, for a hold
 * invoice), a trampoline pays onward. What the relay had already taken before the kill (a
 * forward, even one not yet linked; a held TLC; a trampoline session) is never handled twice:
 * nothing is forwarded or settled twice, and balances move exactly once.
 */
import { describe, expect, it } from 'vitest';
import { bytesToHex } from '../../src/codec/hex.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import { receivedFate } from '../../src/payment/resume.ts';
import { PaymentStore } from '../../src/payment/store.ts';
import { buildNetwork, CKB, diamond, fee, type Stack, savedSession, waitFor } from './sim-network.ts';

const AMOUNT = 10n * CKB;

/** A–B–D: B forwards, D is paid. */
function line() {
  const net = buildNetwork();
  const A = net.addStack('A', 1);
  const B = net.addStack('B', 2);
  const D = net.addStack('D', 4);
  const ab = net.connect(A, B, 1, 100n * CKB, 100n * CKB);
  const bd = net.connect(B, D, 2, 500n * CKB, 0n);
  return { net, A, B, D, ab, bd };
}

function invoice(D: Stack, o: { amount?: bigint; allowMpp?: boolean; paymentHash?: string } = {}) {
  const { invoiceAddress, invoice } = D.invoices.newInvoice({
    amount: o.amount ?? AMOUNT,
    currency: 'Fibd',
    allowMpp: o.allowMpp,
    allowTrampolineRouting: true,
    ...(o.paymentHash ? { paymentHash: o.paymentHash } : {}),
  });
  return { address: invoiceAddress, hash: bytesToHex(invoice.data.paymentHash) };
}

const balances = (net: ReturnType<typeof buildNetwork>, ...stacks: Stack[]) =>
  stacks.map((s) => net.balanceOf(s));

describe('the rule for a received TLC found on restart', () => {
  it('leaves what the relay took, relinks a forward it made, hands the rest again', () => {
    const none = { forwarded: false, held: false, trampolined: false, forwardInChannel: false };
    expect(receivedFate(none)).toBe('handleAgain');
    expect(receivedFate({ ...none, forwarded: true })).toBe('handled');
    expect(receivedFate({ ...none, held: true })).toBe('handled');
    expect(receivedFate({ ...none, trampolined: true })).toBe('handled');
    expect(receivedFate({ ...none, forwardInChannel: true })).toBe('relink');
    expect(receivedFate({ ...none, forwarded: true, forwardInChannel: true })).toBe('handled');
  });
});

describe('a node killed between the commit of an incoming TLC and its handling', () => {
  it('a forwarding node forwards it on restart, once', async () => {
    const { net, A, B, D, bd } = line();
    const [a0, b0, d0] = balances(net, A, B, D);
    const inv = invoice(D);
    B.faults.dropIncoming = true;
    A.payments.send({ invoice: inv.address });
    await waitFor(() => net.pendingTlcs() === 1, 'the TLC committed at B');
    await new Promise((r) => setTimeout(r, 20));
    expect(bd.nextTlc).toBe(0n); // not forwarded
    expect(A.payments.get(inv.hash).status).toBe('Inflight');

    net.restart(B);
    await waitFor(() => A.payments.get(inv.hash).status === 'Success', 'payment success');
    expect(bd.nextTlc).toBe(1n);
    expect(D.invoices.getInvoice(inv.hash).status).toBe('Paid');
    expect(balances(net, A, B, D)).toEqual([a0! - AMOUNT - fee(AMOUNT), b0! + fee(AMOUNT), d0! + AMOUNT]);
    expect(net.pendingTlcs()).toBe(0);
  });

  it('a final node settles it on restart', async () => {
    const { net, A, D } = line();
    const [a0, d0] = balances(net, A, D);
    const inv = invoice(D);
    D.faults.dropIncoming = true;
    A.payments.send({ invoice: inv.address });
    await waitFor(() => net.pendingTlcs() === 2, 'the TLC committed at D');
    await new Promise((r) => setTimeout(r, 20));
    expect(D.invoices.getInvoice(inv.hash).status).toBe('Open');

    net.restart(D);
    await waitFor(() => A.payments.get(inv.hash).status === 'Success', 'payment success');
    expect(D.invoices.getInvoice(inv.hash).status).toBe('Paid');
    expect(balances(net, A, D)).toEqual([a0! - AMOUNT - fee(AMOUNT), d0! + AMOUNT]);
    expect(net.pendingTlcs()).toBe(0);
  });

  it('a final node that had accepted the payment (Received) before the kill fulfils it', async () => {
    const { net, A, D } = line();
    const inv = invoice(D);
    D.faults.dropIncoming = true;
    A.payments.send({ invoice: inv.address });
    await waitFor(() => net.pendingTlcs() === 2, 'the TLC committed at D');
    // What D had saved when it died: the invoice Received, the TLC not yet fulfilled.
    D.invoices.markReceived(inv.hash, AMOUNT);
    net.restart(D);
    await waitFor(() => A.payments.get(inv.hash).status === 'Success', 'payment success');
    expect(D.invoices.getInvoice(inv.hash).status).toBe('Paid');
    expect(net.pendingTlcs()).toBe(0);
  });

  it('a hold invoice holds it on restart until settle_invoice, and a second restart changes nothing', async () => {
    const { net, A, D } = line();
    const preimage = new Uint8Array(32).fill(0x7c);
    const inv = invoice(D, { paymentHash: bytesToHex(ckbHash(preimage)) });
    D.faults.dropIncoming = true;
    A.payments.send({ invoice: inv.address });
    await waitFor(() => net.pendingTlcs() === 2, 'the TLC committed at D');
    net.restart(D);
    await waitFor(() => D.invoices.getInvoice(inv.hash).status === 'Received', 'held');
    expect(D.links.held(inv.hash)).toHaveLength(1);

    net.restart(D);
    expect(D.links.held(inv.hash)).toHaveLength(1);
    expect(net.failures).toEqual([]);
    expect(A.payments.get(inv.hash).status).toBe('Inflight');

    D.invoices.settleInvoice(inv.hash, bytesToHex(preimage));
    await D.relay.settleHeld(inv.hash);
    await waitFor(() => A.payments.get(inv.hash).status === 'Success', 'payment success');
    expect(net.pendingTlcs()).toBe(0);
  });

  it('a final node settles the MPP set whose parts all arrived before the kill', async () => {
    const { net, A, D } = diamond();
    const [d0] = balances(net, D);
    const inv = invoice(D, { amount: 100n * CKB, allowMpp: true });
    D.faults.dropIncoming = true;
    expect(A.payments.send({ invoice: inv.address }).routers).toHaveLength(2);
    await waitFor(() => net.pendingTlcs() === 4, 'both parts committed at D');
    net.restart(D);
    await waitFor(() => A.payments.get(inv.hash).status === 'Success', 'payment success');
    expect(D.invoices.getInvoice(inv.hash).status).toBe('Paid');
    expect(net.balanceOf(D)).toBe(d0! + 100n * CKB);
    expect(net.pendingTlcs()).toBe(0);
  });
});

describe('what the relay took before the kill is not handled twice', () => {
  it('a forward made but not linked is linked on restart, not made again', async () => {
    const { net, A, B, D, bd } = line();
    const [a0, b0, d0] = balances(net, A, B, D);
    const inv = invoice(D);
    B.faults.addThenHang = true; // B's forward reaches the channel, its link is never written
    D.faults.dropIncoming = true; // and D does not answer before B is back
    A.payments.send({ invoice: inv.address });
    await waitFor(() => net.pendingTlcs() === 2, 'the forward in B–D');
    expect(B.links.forwardedFrom('ch1', 0n)).toBe(false);

    net.restart(B);
    expect(B.links.forwardedFrom('ch1', 0n)).toBe(true);
    net.restart(D);
    await waitFor(() => A.payments.get(inv.hash).status === 'Success', 'payment success');
    expect(bd.nextTlc).toBe(1n); // forwarded once
    expect(balances(net, A, B, D)).toEqual([a0! - AMOUNT - fee(AMOUNT), b0! + fee(AMOUNT), d0! + AMOUNT]);
    expect(net.pendingTlcs()).toBe(0);
  });

  it('a forward linked before the kill is left to its outcome', async () => {
    const { net, A, B, D, bd } = line();
    const inv = invoice(D);
    D.faults.dropIncoming = true;
    A.payments.send({ invoice: inv.address });
    await waitFor(() => net.pendingTlcs() === 2, 'the forward in B–D');
    net.restart(B);
    net.restart(D);
    await waitFor(() => A.payments.get(inv.hash).status === 'Success', 'payment success');
    expect(bd.nextTlc).toBe(1n);
    expect(net.failures).toEqual([]);
  });
});

describe('through a trampoline', () => {
  /** A–T–B–D; A knows only its channel to T. */
  function network() {
    const net = buildNetwork();
    const A = net.addStack('A', 1);
    const T = net.addStack('T', 2);
    const B = net.addStack('B', 3);
    const D = net.addStack('D', 4);
    net.connect(A, T, 1, 100n * CKB, 0n);
    const tb = net.connect(T, B, 2, 100n * CKB, 0n);
    const bd = net.connect(B, D, 3, 100n * CKB, 0n);
    for (const c of [tb, bd]) A.hidden.add(c.outpoint);
    return { net, A, T, B, D, tb };
  }
  const BUDGET = 5_000_000n;

  it('a trampoline killed before it handled the TLC pays onward on restart', async () => {
    const { net, A, T, D } = network();
    const [a0, d0] = balances(net, A, D);
    const inv = invoice(D);
    T.faults.dropIncoming = true;
    A.payments.send({ invoice: inv.address, trampoline_hops: [T.pubkey], max_fee_amount: BUDGET });
    await waitFor(() => net.pendingTlcs() === 1, 'the TLC committed at T');
    await new Promise((r) => setTimeout(r, 20));
    expect(new PaymentStore(T.db).view(inv.hash)).toBeUndefined();
    net.restart(T);
    await waitFor(() => A.payments.get(inv.hash).status === 'Success', 'payment success');
    expect(balances(net, A, D)).toEqual([a0! - AMOUNT - BUDGET, d0! + AMOUNT]);
    expect(savedSession(T, inv.hash)!.request.trampoline?.upstreamSettled).toBe(true);
    expect(net.pendingTlcs()).toBe(0);
  });

  it('a trampoline whose own payment was under way is not started again', async () => {
    const { net, A, T, D, tb } = network();
    const inv = invoice(D);
    D.faults.dropIncoming = true;
    A.payments.send({ invoice: inv.address, trampoline_hops: [T.pubkey], max_fee_amount: BUDGET });
    await waitFor(() => net.pendingTlcs() === 3, 'T’s own payment reached D');
    net.restart(T);
    net.restart(D);
    await waitFor(() => A.payments.get(inv.hash).status === 'Success', 'payment success');
    expect(tb.nextTlc).toBe(1n);
    expect(net.failures).toEqual([]);
    expect(net.pendingTlcs()).toBe(0);
  });
});
