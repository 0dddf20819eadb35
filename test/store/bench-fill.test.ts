/**
 * `bench:store`'s filling (`bench/store-fill.ts`) at a small size, on a real SQLite file: what it
 * writes reads back through the services as a node's own rows do, and a settled payment costs
 * under 1 KB of store on each side (issue #21's bound).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fillChannels, fillForwarder, fillPayee, fillPayer, sessionOf } from '../../bench/store-fill.ts';
import type { Channel } from '../../src/channel/state.ts';
import { ChannelStore } from '../../src/channel/store.ts';
import { createInvoiceService } from '../../src/invoice/service.ts';
import { invoiceTables } from '../../src/invoice/store.ts';
import { NODE_SCHEMAS } from '../../src/node/store-schemas.ts';
import { paymentRecord } from '../../src/payment/record.ts';
import { viewOf } from '../../src/payment/settled.ts';
import { PaymentStore } from '../../src/payment/store.ts';
import { openDatabase, type SqliteDb } from '../../src/store/db.ts';
import { attempt, SESSIONS, SOURCE, session } from '../payments/settled-fixtures.ts';

const N = 2_000;
let dir: string;
let file: string;
let db: SqliteDb;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-bench-fill-'));
  file = path.join(dir, 'strand.db');
  db = openDatabase(file, NODE_SCHEMAS);
});
afterEach(() => {
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function bytes(): number {
  db.pragma('wal_checkpoint(TRUNCATE)');
  return fs.statSync(file).size;
}

const template = {
  tempId: '0x01',
  id: '0x02',
  peer: '02'.padEnd(66, '1'),
  state: 'CHANNEL_READY',
  createdAt: 1_795_000_000_000,
  seed: '0x03',
  fundingTxHash: `0x${'04'.repeat(32)}`,
  latestCommitmentTxHash: `0x${'05'.repeat(32)}`,
  localBalance: 100n,
  tlcs: [],
  blob: 'ab'.repeat(4_000),
} as unknown as Channel;

describe('bench:store filling', () => {
  it('channels: each its own ids and peer, the template otherwise', () => {
    const own = fillChannels(db, template, 50);
    const all = new ChannelStore(db).list();
    expect(all).toHaveLength(50);
    expect(new Set(all.map((c) => c.peer)).size).toBe(50);
    expect(new Set(own.map((c) => c.outpoint)).size).toBe(50);
    expect(all.every((c) => c.localBalance === 100n && c.state === 'CHANNEL_READY')).toBe(true);
  });

  it('payer: settled payments over our channels, under 1 KB each, answering as their sessions', () => {
    const channels = fillChannels(db, template, 10);
    const keysend = SESSIONS['a keysend with custom records, after a failed try']!();
    const paid = session({ attempts: [attempt(1, 'Success', 2, 10_000n)] });
    const before = bytes();
    const hashes = fillPayer(db, [paid, keysend], N, channels);
    const perPayment = (bytes() - before) / N;
    expect(perPayment).toBeLessThan(1_000);
    const store = new PaymentStore(db);
    expect(store.countByStatus()).toEqual({ Success: N });
    const p = store.settled(hashes[1]!)!;
    expect(p.routes[0]![0]).toMatchObject({
      target: channels[1]!.peer,
      channelOutpoint: channels[1]!.outpoint,
    });
    // The session the bench builds back from a settled payment answers as the stored one.
    expect(paymentRecord(viewOf(sessionOf(p)), SOURCE)).toEqual(paymentRecord(p, SOURCE));
  });

  it('forwarder and payee: preimages, and paid invoices read back by the invoice service', () => {
    const invoices = createInvoiceService({
      db,
      nodeSecretKey: new Uint8Array(32).fill(7),
      currency: 'Fibd',
    });
    const { invoiceAddress } = invoices.newInvoice({
      amount: 10_000n,
      currency: 'Fibd',
      description: 'bench',
    });
    const before = bytes();
    const { written, invoices: hashes } = fillPayee(db, invoiceAddress, 10_000n, N, 2);
    expect(written).toBe(N);
    expect(hashes).toHaveLength(N / 2);
    expect((bytes() - before) / N).toBeLessThan(1_000);
    const got = invoices.getInvoice(hashes[0]!);
    expect(got).toMatchObject({ status: 'Paid', receivedAmount: 10_000n });
    expect(got.preimage).toHaveLength(32);

    const learned = fillForwarder(db, 100);
    expect(invoiceTables(db).getPreimage(Buffer.from(learned[0]!.slice(2), 'hex'))).toHaveLength(32);
  });
});
