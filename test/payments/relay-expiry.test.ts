/**
 * A received TLC failed near its expiry (the channels' expiry check asks the relay): the fail may
 * wait for the channel's round while the peer reconnects, and a check meanwhile does not queue a
 * second fail of the same TLC; once the first is through, a later one goes out again.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { describe, expect, it } from 'vitest';
import { bytesToHex } from '../../src/codec/hex.ts';
import { createInvoiceService } from '../../src/invoice/service.ts';
import { invoiceSchema } from '../../src/invoice/store.ts';
import { paymentLinkSchema, TlcLinks } from '../../src/payment/links.ts';
import { type ChannelTlcPort, type IncomingTlc, PaymentRelay } from '../../src/payment/relay.ts';
import type { PaymentService } from '../../src/payment/service.ts';
import { paymentSchema } from '../../src/payment/store.ts';
import { openDatabase } from '../../src/store/db.ts';

const tlc = (id: bigint): IncomingTlc => ({
  channelId: 'ch1',
  tlcId: id,
  amount: 1000n,
  paymentHash: `0x${'aa'.repeat(32)}`,
  expiry: 1n,
  hashAlgorithm: 0,
  onion: new Uint8Array(0),
});

describe('failing received TLCs near their expiry', () => {
  it('fails each TLC once while its fail waits for the channel', async () => {
    const sk = new Uint8Array(32).fill(4);
    const db = openDatabase(':memory:', [invoiceSchema, paymentSchema, paymentLinkSchema]);
    const fails: bigint[] = [];
    const release: (() => void)[] = [];
    const port = {
      failTlc: (_channelId: string, tlcId: bigint) => {
        fails.push(tlcId);
        return new Promise<void>((r) => release.push(r));
      },
    } as unknown as ChannelTlcPort;
    const relay = new PaymentRelay({
      nodeSecretKey: sk,
      nodePubkey: bytesToHex(secp256k1.getPublicKey(sk, true), false),
      channels: port,
      links: new TlcLinks(db),
      invoices: createInvoiceService({ db, nodeSecretKey: sk, currency: 'Fibd' }),
      payments: { onTrampolineEnd: () => {} } as unknown as PaymentService,
    });
    const first = relay.failExpiring(tlc(1n));
    await relay.failExpiring(tlc(1n));
    const other = relay.failExpiring(tlc(2n));
    expect(fails).toEqual([1n, 2n]);
    for (const r of release.splice(0)) r();
    await Promise.all([first, other]);
    const again = relay.failExpiring(tlc(1n));
    expect(fails).toEqual([1n, 2n, 1n]);
    for (const r of release.splice(0)) r();
    await again;
  });
});
