/**
 * The relay tells a refusal of the upstream channel by its code, never its text: a forward's
 * preimage passed back to a TLC already settled (`TlcNotFound`) or on a closed channel
 * (`ChannelClosed`) is done with; any other refusal keeps the outcome for the next start, even
 * one whose text reads like "not found or not removable".
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ChannelError } from '../../src/channel/errors.ts';
import { createInvoiceService } from '../../src/invoice/service.ts';
import { invoiceSchema } from '../../src/invoice/store.ts';
import { paymentLinkSchema, TlcLinks } from '../../src/payment/links.ts';
import { type ChannelTlcPort, PaymentRelay } from '../../src/payment/relay.ts';
import { PaymentService } from '../../src/payment/service.ts';
import { PaymentStore, paymentSchema } from '../../src/payment/store.ts';
import { type Db, openDatabase } from '../../src/store/db.ts';

const SK = new Uint8Array(32).fill(7);
const PUBKEY = `0x02${'11'.repeat(32)}`;
const preimage = new Uint8Array(32).fill(1);
const HASH = `0x${createHash('sha256').update(preimage).digest('hex')}`;
const dbs: Db[] = [];
const dirs: string[] = [];

afterEach(() => {
  for (const db of dbs.splice(0)) db.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** A forwarding node whose upstream channel answers every fulfil with `refusal`. */
function forwarder(refusal: Error) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-codes-'));
  dirs.push(dir);
  const db = openDatabase(path.join(dir, 'node.db'), [invoiceSchema, paymentSchema, paymentLinkSchema]);
  dbs.push(db);
  const invoices = createInvoiceService({ db, nodeSecretKey: SK, currency: 'Fibd' });
  const payments = new PaymentService({
    store: new PaymentStore(db),
    nodePubkey: PUBKEY,
    router: {
      findRoute: () => {
        throw new Error('no routing in this test');
      },
    },
    tlc: { sendTlc: () => Promise.reject(new Error('no sending in this test')) },
    invoices: {
      parseInvoice: (s) => invoices.parseInvoice(s),
      verifyInvoice: () => true,
      payeeOf: () => undefined,
    },
  });
  const fulfils: string[] = [];
  const channels = {
    fulfilTlc: async (channelId: string, tlcId: bigint) => {
      fulfils.push(`${channelId}/${tlcId}`);
      throw refusal;
    },
  } as unknown as ChannelTlcPort;
  const links = new TlcLinks(db);
  const relay = new PaymentRelay({
    nodeSecretKey: SK,
    nodePubkey: PUBKEY,
    channels,
    links,
    invoices,
    payments,
  });
  // Downstream TLC 4 on `out` was forwarded for upstream TLC 9 on `in`.
  links.put('out', 4n, {
    kind: 'forward',
    paymentHash: HASH,
    inChannelId: 'in',
    inTlcId: 9n,
    sharedSecret: `0x${'cd'.repeat(32)}`,
  });
  return { relay, links, fulfils };
}

describe('relay: the upstream refusal of a preimage, by code', () => {
  it.each([
    ['TlcNotFound', new ChannelError('TlcNotFound', 'Invalid parameter: TLC 9 not found or not removable')],
    ['ChannelClosed', new ChannelError('ChannelClosed', 'Messaging failed because channel is closed')],
  ])(
    '%s: the upstream TLC is settled already, the link and its outcome are done with',
    async (_c, refusal) => {
      const { relay, links, fulfils } = forwarder(refusal);
      await relay.onFulfilled('out', 4n, preimage);
      expect(fulfils).toEqual(['in/9']);
      expect(links.get('out', 4n)).toBeUndefined();
      expect(links.outcomes()).toEqual([]);
    },
  );

  it.each([
    ['another code with the same text', new ChannelError('InvalidState', 'TLC 9 not found or not removable')],
    ['an uncoded error with the same text', new Error('Invalid parameter: TLC 9 not found or not removable')],
    [
      'a busy channel',
      new ChannelError('WaitingTlcAck', 'Unable to handle TLC command in waiting TLC ACK state'),
    ],
  ])('%s: the refusal is passed on, the outcome kept for the next start', async (_c, refusal) => {
    const { relay, links, fulfils } = forwarder(refusal);
    await expect(relay.onFulfilled('out', 4n, preimage)).rejects.toBe(refusal);
    expect(fulfils).toEqual(['in/9']);
    expect(links.get('out', 4n)?.kind).toBe('forward');
    const kept = links.outcomes();
    expect(kept.map((k) => [k.channelId, k.tlcId])).toEqual([['out', 4n]]);
    const outcome = kept[0]!.outcome as { preimage: Uint8Array };
    expect(Buffer.from(outcome.preimage)).toEqual(Buffer.from(preimage));
  });
});
