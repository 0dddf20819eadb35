/**
 * Money follows the invoice: real payment stacks (invoice service, payment service, relay, each
 * with its own SQLite store) joined by simulated channels in CKB and in two tokens. A Strand payer
 * pays an invoice in the invoice's asset and refuses an explicit `udt_type_script` naming another;
 * a receiver fails back (as fnn: IncorrectOrUnknownPaymentDetails) a TLC a forging payer offers
 * in another asset — for a plain, a hold and an MPP invoice — and the invoice stays Open.
 */
import { describe, expect, it } from 'vitest';
import { bytesToHex } from '../../src/codec/hex.ts';
import { scriptToMolecule } from '../../src/invoice/script.ts';
import { TlcLinks } from '../../src/payment/links.ts';
import { encodeMppRecord, MPP_RECORD_KEY } from '../../src/payment/onion/hop-data.ts';
import { buildOnion, decodeErrorPacket } from '../../src/payment/onion/packet.ts';
import { buildPaymentHops } from '../../src/payment/onion/route-hops.ts';
import { buildNetwork, CKB, type SimChannel, type Stack, waitFor } from './sim-network.ts';

const TOKEN_X = { code_hash: `0x${'ab'.repeat(32)}`, hash_type: 'type' as const, args: '0x0102' };
const TOKEN_Y = { code_hash: `0x${'cd'.repeat(32)}`, hash_type: 'type' as const, args: '0x0304' };
const AMOUNT = 10n * CKB;

/** A pays D over one channel per asset: CKB, token X, token Y. */
function network() {
  const net = buildNetwork();
  const A = net.addStack('A', 1);
  const D = net.addStack('D', 4);
  const ckb = net.connect(A, D, 1, 100n * CKB, 0n);
  const x = net.connect(A, D, 2, 100n * CKB, 0n);
  const y = net.connect(A, D, 3, 100n * CKB, 0n);
  x.udt = TOKEN_X;
  y.udt = TOKEN_Y;
  const balances = () => [ckb, x, y].map((c) => c.balance.get(D)!);
  return { net, A, D, ckb, x, y, balances };
}

function invoiceOf(
  D: Stack,
  o: { udt?: typeof TOKEN_X; hold?: boolean; mpp?: boolean } = {},
): { address: string; hash: string; secret?: Uint8Array } {
  const { invoiceAddress, invoice } = D.invoices.newInvoice({
    amount: AMOUNT,
    currency: 'Fibd',
    ...(o.udt ? { udtTypeScript: scriptToMolecule(o.udt) } : {}),
    ...(o.hold ? { paymentHash: `0x${'5e'.repeat(32)}` } : {}),
    ...(o.mpp ? { allowMpp: true } : {}),
  });
  const secret = invoice.data.attrs.find((a) => a.kind === 'PaymentSecret')?.value;
  return {
    address: invoiceAddress,
    hash: bytesToHex(invoice.data.paymentHash),
    ...(secret ? { secret } : {}),
  };
}

/**
 * A payer that builds the onion itself and offers the TLC on `channel`, whatever the invoice asks
 * for; resolves with the error code D failed it with.
 */
async function forge(
  net: ReturnType<typeof buildNetwork>,
  A: Stack,
  D: Stack,
  channel: SimChannel,
  hash: string,
  o: { amount?: bigint; now?: number; mppTotal?: bigint; secret?: Uint8Array } = {},
): Promise<string> {
  const amount = o.amount ?? AMOUNT;
  const finalDelta = 86_400_000;
  const hops = buildPaymentHops(
    [
      {
        target: D.pubkey,
        channelOutpoint: channel.outpoint,
        amountReceived: amount,
        incomingTlcExpiry: finalDelta,
      },
    ],
    {
      amount,
      finalTlcExpiryDelta: finalDelta,
      ...(o.now ? { now: o.now } : {}),
      ...(o.secret
        ? { customRecords: new Map([[MPP_RECORD_KEY, encodeMppRecord(o.secret, o.mppTotal ?? AMOUNT)]]) }
        : {}),
    },
  );
  const onion = buildOnion(hops, Buffer.from(hash.slice(2), 'hex'));
  const seen = net.failures.length;
  await A.relay.outbox().sendTlc({
    attemptId: 'forged',
    paymentHash: hash,
    channelOutpoint: channel.outpoint,
    amount: hops[0]!.amount,
    expiry: hops[0]!.expiry,
    hashAlgorithm: 0,
    onionPacket: onion.packet,
  });
  await waitFor(() => net.failures.length > seen, 'the forged TLC to fail');
  return decodeErrorPacket(net.failures.at(-1)!.packet, onion.sharedSecrets)!.error.code;
}

describe('a Strand payer pays in the asset of the invoice', () => {
  it('pays a token invoice in that token, not in CKB', async () => {
    const { net, A, D, balances } = network();
    const inv = invoiceOf(D, { udt: TOKEN_X });
    A.payments.send({ invoice: inv.address });
    await waitFor(() => A.payments.get(inv.hash).status === 'Success', 'payment success');
    expect(balances()).toEqual([0n, AMOUNT, 0n]);
    expect(D.invoices.getInvoice(inv.hash).status).toBe('Paid');
    expect(net.failures).toEqual([]);
  });

  it('accepts an explicit udt_type_script naming the invoice token', async () => {
    const { A, D, balances } = network();
    const inv = invoiceOf(D, { udt: TOKEN_X });
    A.payments.send({ invoice: inv.address, udt_type_script: { ...TOKEN_X, args: '0x0102' } });
    await waitFor(() => A.payments.get(inv.hash).status === 'Success', 'payment success');
    expect(balances()).toEqual([0n, AMOUNT, 0n]);
  });

  it('refuses an explicit udt_type_script naming another asset, naming both', () => {
    const { A, D, balances } = network();
    const ckbInvoice = invoiceOf(D);
    expect(() => A.payments.send({ invoice: ckbInvoice.address, udt_type_script: TOKEN_X })).toThrow(
      `InvalidParameter: Failed to validate payment request: "udt_type_script does not match the invoice: the invoice is paid in CKB, udt_type_script names UDT {code_hash: ${TOKEN_X.code_hash}, hash_type: type, args: 0x0102}"`,
    );
    const tokenInvoice = invoiceOf(D, { udt: TOKEN_X });
    expect(() => A.payments.send({ invoice: tokenInvoice.address, udt_type_script: TOKEN_Y })).toThrow(
      /the invoice is paid in UDT \{code_hash: 0xabab.*args: 0x0102\}, udt_type_script names UDT \{code_hash: 0xcdcd.*args: 0x0304\}/,
    );
    expect(() => A.payments.get(ckbInvoice.hash)).toThrow('Payment session not found');
    expect(() => A.payments.get(tokenInvoice.hash)).toThrow('Payment session not found');
    expect(balances()).toEqual([0n, 0n, 0n]);
  });

  it('keysend takes its asset from the params', async () => {
    const { A, D, balances } = network();
    const sent = A.payments.send({
      target_pubkey: D.pubkey,
      amount: AMOUNT,
      keysend: true,
      udt_type_script: TOKEN_Y,
    });
    await waitFor(() => A.payments.get(sent.payment_hash).status === 'Success', 'keysend success');
    expect(balances()).toEqual([0n, 0n, AMOUNT]);
  });
});

describe('a receiver settles a TLC only in the asset, amount and expiry of its invoice', () => {
  const cases = [
    { name: 'a CKB invoice paid in tokens', udt: undefined, on: 'x' },
    { name: 'a token invoice paid in CKB', udt: TOKEN_X, on: 'ckb' },
    { name: 'a token invoice paid in another token', udt: TOKEN_Y, on: 'x' },
  ] as const;
  for (const c of cases) {
    it(`fails back ${c.name}: IncorrectOrUnknownPaymentDetails, the invoice stays Open`, async () => {
      const n = network();
      const inv = invoiceOf(n.D, c.udt ? { udt: c.udt } : {});
      expect(await forge(n.net, n.A, n.D, n[c.on], inv.hash)).toBe('IncorrectOrUnknownPaymentDetails');
      expect(n.D.invoices.getInvoice(inv.hash).status).toBe('Open');
      expect(n.balances()).toEqual([0n, 0n, 0n]);
      expect(n.net.pendingTlcs()).toBe(0);
    });
  }

  it('fails back a wrong asset for a hold invoice: nothing held, not Received', async () => {
    const { net, A, D, ckb, balances } = network();
    const inv = invoiceOf(D, { udt: TOKEN_X, hold: true });
    expect(await forge(net, A, D, ckb, inv.hash)).toBe('IncorrectOrUnknownPaymentDetails');
    expect(D.invoices.getInvoice(inv.hash).status).toBe('Open');
    expect(new TlcLinks(D.db).held(inv.hash)).toEqual([]);
    expect(balances()).toEqual([0n, 0n, 0n]);
  });

  it('fails back an MPP part in a wrong asset; the parts in the right one complete the set', async () => {
    const { net, A, D, ckb, x, balances } = network();
    const inv = invoiceOf(D, { udt: TOKEN_X, mpp: true });
    const half = { amount: AMOUNT / 2n, secret: inv.secret! };
    expect(await forge(net, A, D, ckb, inv.hash, half)).toBe('IncorrectOrUnknownPaymentDetails');
    expect(new TlcLinks(D.db).held(inv.hash)).toEqual([]);
    expect(D.invoices.getInvoice(inv.hash).status).toBe('Open');
    A.payments.send({ invoice: inv.address });
    await waitFor(() => A.payments.get(inv.hash).status === 'Success', 'payment success');
    expect(balances()).toEqual([0n, AMOUNT, 0n]);
    expect(D.invoices.getInvoice(inv.hash).status).toBe('Paid');
    // A later TLC in CKB for the paid invoice is not fulfilled by a retry either.
    expect(D.relay.preimageFor(ckb.id, { paymentHash: inv.hash, amount: AMOUNT })).toBeUndefined();
    expect(D.relay.preimageFor(x.id, { paymentHash: inv.hash, amount: AMOUNT })).toMatch(/^0x/);
  });

  it('fails back a TLC below the invoice amount or expiring before its final delta (fnn codes)', async () => {
    const { net, A, D, x, balances } = network();
    const inv = invoiceOf(D, { udt: TOKEN_X });
    expect(await forge(net, A, D, x, inv.hash, { amount: AMOUNT - 1n })).toBe('FinalIncorrectTlcAmount');
    // Built a month ago: its expiry (with the random privacy offset, at most 14 days) has passed.
    const monthAgo = Date.now() - 30 * 86_400_000;
    expect(await forge(net, A, D, x, inv.hash, { now: monthAgo })).toBe('FinalIncorrectExpiryDelta');
    expect(D.invoices.getInvoice(inv.hash).status).toBe('Open');
    expect(balances()).toEqual([0n, 0n, 0n]);
  });
});
