/**
 * A forward's preimage is claimed upstream as soon as the peer's RemoveTlc brings it (the channel's
 * 'preimage' notice), and the end of the round that removes the TLC (its 'fulfilled' notice)
 * claims nothing again — not even while the first claim still waits for the upstream channel.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { describe, expect, it } from 'vitest';
import { bytesToHex } from '../../src/codec/hex.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import { createInvoiceService } from '../../src/invoice/service.ts';
import { invoiceSchema } from '../../src/invoice/store.ts';
import { paymentLinkSchema, TlcLinks } from '../../src/payment/links.ts';
import { type ChannelTlcPort, PaymentRelay } from '../../src/payment/relay.ts';
import type { PaymentService } from '../../src/payment/service.ts';
import { paymentSchema } from '../../src/payment/store.ts';
import { openDatabase } from '../../src/store/db.ts';

describe('a forward fulfilled downstream', () => {
  it('is claimed upstream once, from the first report of its preimage', async () => {
    const sk = new Uint8Array(32).fill(4);
    const db = openDatabase(':memory:', [invoiceSchema, paymentSchema, paymentLinkSchema]);
    const claims: [string, bigint, string][] = [];
    const release: (() => void)[] = [];
    const port = {
      fulfilTlc: (channelId: string, tlcId: bigint, preimage: Uint8Array) => {
        claims.push([channelId, tlcId, bytesToHex(preimage)]);
        return new Promise<void>((r) => release.push(r));
      },
    } as unknown as ChannelTlcPort;
    const links = new TlcLinks(db);
    const invoices = createInvoiceService({ db, nodeSecretKey: sk, currency: 'Fibd' });
    const relay = new PaymentRelay({
      nodeSecretKey: sk,
      nodePubkey: bytesToHex(secp256k1.getPublicKey(sk, true), false),
      channels: port,
      links,
      invoices,
      payments: { onTrampolineEnd: () => {} } as unknown as PaymentService,
    });
    const preimage = new Uint8Array(32).fill(9);
    const hash = bytesToHex(ckbHash(preimage));
    links.put('down', 7n, {
      kind: 'forward',
      paymentHash: hash,
      inChannelId: 'up',
      inTlcId: 3n,
      sharedSecret: `0x${'11'.repeat(32)}`,
    });
    // The channel records the outcome with the state that holds the preimage, then reports it.
    relay.recordOutcome('down', 7n, { preimage });
    const early = relay.onFulfilled('down', 7n, preimage);
    expect(claims).toEqual([['up', 3n, bytesToHex(preimage)]]);
    // The round ends while the upstream claim still waits for its channel.
    relay.recordOutcome('down', 7n, { preimage });
    await relay.onFulfilled('down', 7n, preimage);
    expect(claims).toHaveLength(1);
    expect(links.hasOutcome('down', 7n)).toBe(true);
    for (const r of release.splice(0)) r();
    await early;
    expect(links.get('down', 7n)).toBeUndefined();
    expect(links.hasOutcome('down', 7n)).toBe(false);
    // Kept for the periodic TLC check, should the upstream claim have to be made again.
    expect(invoices.getPreimage(hash)).toEqual(preimage);
    // A late report after the delivery finds no link and claims nothing.
    relay.recordOutcome('down', 7n, { preimage });
    await relay.onFulfilled('down', 7n, preimage);
    expect(claims).toHaveLength(1);
    expect(links.hasOutcome('down', 7n)).toBe(false);
  });
});
