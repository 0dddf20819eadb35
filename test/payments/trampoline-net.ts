/**
 * The simulated network the trampoline tests share: A–T–B–D, and T2 beside T (T–T2, T2–B) for two
 * trampolines. A's graph holds only its channel to T: it has no route to D of its own. Also a
 * TLC sent to T by hand, for what an honest sender never sends.
 */
import { expect } from 'vitest';
import { bytesToHex, hexToBytes } from '../../src/codec/hex.ts';
import { TRAMPOLINE_RECORD_KEY } from '../../src/payment/onion/hop-data.ts';
import { buildOnion } from '../../src/payment/onion/packet.ts';
import { buildPaymentHops } from '../../src/payment/onion/route-hops.ts';
import { buildTrampolineOnion, peelTrampolineOnion } from '../../src/payment/onion/trampoline.ts';
import { planTrampoline } from '../../src/payment/trampoline.ts';
import { buildNetwork, CKB, type Stack } from './sim-network.ts';

export const AMOUNT = 10n * CKB;
export const BUDGET = 5_000_000n; // the default 5‰ cap of 10 CKB

export function network() {
  const net = buildNetwork();
  const A = net.addStack('A', 1);
  const T = net.addStack('T', 2);
  const B = net.addStack('B', 3);
  const D = net.addStack('D', 4);
  const T2 = net.addStack('T2', 5);
  const at = net.connect(A, T, 1, 100n * CKB, 0n);
  const tb = net.connect(T, B, 2, 100n * CKB, 0n);
  const bd = net.connect(B, D, 3, 100n * CKB, 0n);
  const tt2 = net.connect(T, T2, 4, 100n * CKB, 0n);
  const t2b = net.connect(T2, B, 5, 100n * CKB, 0n);
  for (const c of [tb, bd, tt2, t2b]) A.hidden.add(c.outpoint);
  return { net, A, T, B, D, T2, at, tb, bd, tt2, t2b };
}

export function invoice(D: Stack, amount = AMOUNT, o: { allowMpp?: boolean } = {}) {
  const { invoiceAddress, invoice } = D.invoices.newInvoice({
    amount,
    currency: 'Fibd',
    allowTrampolineRouting: true,
    ...(o.allowMpp ? { allowMpp: true } : {}),
  });
  return { address: invoiceAddress, hash: bytesToHex(invoice.data.paymentHash) };
}

/**
 * Sends A's TLC to T by hand over `outpoint`: a correct inner onion for `finalAmount` within
 * BUDGET, but an outer TLC of `amount` — a dishonest or mistaken sender, or one part of a
 * payment split before the trampoline. `records`: the inner Final payload's custom records.
 */
export async function sendToTrampoline(
  A: Stack,
  T: Stack,
  D: Stack,
  hash: string,
  outpoint: string,
  o: {
    amount: bigint;
    finalAmount?: bigint;
    attemptId?: string;
    records?: Map<number, Uint8Array>;
    maxParts?: bigint;
  },
) {
  const plan = planTrampoline({
    hops: [T.pubkey],
    target: D.pubkey,
    finalAmount: o.finalAmount ?? AMOUNT,
    maxFeeAmount: BUDGET,
    finalTlcExpiryDelta: 86_400_000n,
    tlcExpiryLimit: 1_209_600_000n,
    hashAlgorithm: 0,
    paymentPreimage: null,
    customRecords: o.records ?? null,
    maxParts: o.maxParts ?? null,
  });
  const inner = buildTrampolineOnion(
    [T.pubkey, D.pubkey].map((k) => hexToBytes(k)),
    plan.payloads,
    hexToBytes(hash),
  ).packet;
  expect(peelTrampolineOnion(inner, T.sk, hexToBytes(hash)).payload.type).toBe('Forward');
  const hops = buildPaymentHops(
    [
      {
        target: T.pubkey,
        channelOutpoint: outpoint,
        amountReceived: o.amount,
        incomingTlcExpiry: 115_200_000,
      },
    ],
    {
      amount: o.amount,
      finalTlcExpiryDelta: 115_200_000,
      customRecords: new Map([[TRAMPOLINE_RECORD_KEY, inner]]),
    },
  );
  const onion = buildOnion(hops, hexToBytes(hash));
  await A.relay.outbox().sendTlc({
    attemptId: o.attemptId ?? 'by-hand',
    paymentHash: hash,
    channelOutpoint: outpoint,
    amount: hops[0]!.amount,
    expiry: hops[0]!.expiry,
    hashAlgorithm: 0,
    onionPacket: onion.packet,
  });
  return { sharedSecrets: onion.sharedSecrets, amountToFirst: plan.amountToFirst };
}
