/** The chaos run's final checks, on hand-made snapshots: each rule catches what it is for. */
import { describe, expect, it } from 'vitest';
import { audit, type ChannelView, type PayerRecord, type Snapshot, sameSnapshot } from './audit.ts';

const line = ['alice', 'bob', 'carol'];
const ch = (
  channelId: string,
  local: bigint,
  remote: bigint,
  extra: Partial<ChannelView> = {},
): ChannelView => ({
  channelId,
  state: 'CHANNEL_READY',
  local,
  remote,
  offered: 0n,
  received: 0n,
  ...extra,
});

function net(
  ab: [bigint, bigint],
  bc: [bigint, bigint],
  payments: PayerRecord[] = [],
  invoices = new Map(),
): Snapshot {
  return {
    channels: new Map([
      ['alice', new Map([['ab', ch('ab', ab[0], ab[1])]])],
      [
        'bob',
        new Map([
          ['ab', ch('ab', ab[1], ab[0])],
          ['bc', ch('bc', bc[0], bc[1])],
        ]),
      ],
      ['carol', new Map([['bc', ch('bc', bc[1], bc[0])]])],
    ]),
    payments,
    invoices,
  };
}

const before = net([1000n, 500n], [1000n, 500n]);
// alice pays carol 100 through bob, fee 1.
const paid: PayerRecord = {
  payer: 'alice',
  hash: '0x01',
  status: 'Success',
  fee: 1n,
  payee: 'carol',
  amount: 100n,
};

describe('chaos audit', () => {
  it('accepts a network whose payments account for every move', () => {
    const after = net([899n, 601n], [900n, 600n], [paid], new Map([['carol', new Map([['0x01', 'Paid']])]]));
    expect(audit({ line, before, after })).toEqual([]);
  });

  it('names a shannon created, a disagreement between ends, and an invoice left Received', () => {
    const after = net(
      [899n, 601n],
      [900n, 601n],
      [paid],
      new Map([['carol', new Map([['0x01', 'Received']])]]),
    );
    const v = audit({ line, before, after });
    expect(v).toContain('invoice 0x01 of carol stuck in Received');
    expect(v).toContain("payment 0x01 succeeded at alice but carol's invoice is Received");
    expect(v.some((x) => x.startsWith('bob: channel bc holds 1501'))).toBe(true);
    expect(v.some((x) => x.startsWith('carol: holdings moved by 101'))).toBe(true);
  });

  it('names a payment not ended and a TLC left pending', () => {
    const after = net([1000n, 500n], [1000n, 500n], [{ ...paid, status: 'Inflight' }]);
    after.channels.get('alice')!.set('ab', ch('ab', 900n, 500n, { offered: 100n }));
    const v = audit({ line, before, after });
    expect(v).toContain('payment 0x01 of alice still Inflight');
    expect(v).toContain('alice: channel ab has TLCs pending');
    expect(v.some((x) => x.startsWith('channel ab: alice says 900/500'))).toBe(true);
  });

  it('counts two snapshots the same only when nothing moved between them', () => {
    const a = net([899n, 601n], [900n, 600n], [paid]);
    expect(sameSnapshot(a, net([899n, 601n], [900n, 600n], [paid]))).toBe(true);
    // The payee read before a payment reached it, the next read after: a move, not a loss.
    expect(sameSnapshot(a, net([899n, 601n], [900n, 600n], [{ ...paid, status: 'Failed' }]))).toBe(false);
    expect(sameSnapshot(a, net([899n, 601n], [899n, 601n], [paid]))).toBe(false);
    const invoiced = net(
      [899n, 601n],
      [900n, 600n],
      [paid],
      new Map([['carol', new Map([['0x01', 'Open']])]]),
    );
    const paidInvoice = net(
      [899n, 601n],
      [900n, 600n],
      [paid],
      new Map([['carol', new Map([['0x01', 'Paid']])]]),
    );
    expect(sameSnapshot(invoiced, paidInvoice)).toBe(false);
  });
});
