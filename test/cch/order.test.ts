/**
 * The order machine (`src/cch/order.ts`), fnn v0.8's transitions: forward only along
 * Pending → IncomingAccepted → (OutgoingInFlight) → OutgoingSuccess → Success, Failed from any
 * status but Success, a success only with a preimage that hashes to the payment hash, and the
 * actions each status starts (on entering, and on a restart).
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { describe, expect, it } from 'vitest';
import {
  actionsOnEntering,
  actionsOnStarting,
  applyEvent,
  type CchOrder,
  type CchOrderStatus,
  isExpiredAt,
} from '../../src/cch/order.ts';

const preimage = `0x${'ab'.repeat(32)}`;
const paymentHash = `0x${Buffer.from(sha256(Buffer.from('ab'.repeat(32), 'hex'))).toString('hex')}`;
const order = (status: CchOrderStatus, extra: Partial<CchOrder> = {}): CchOrder => ({
  createdAt: 1000,
  expiryDeltaSeconds: 100,
  wrappedBtcTypeScript: { code_hash: `0x${'00'.repeat(32)}`, hash_type: 'type', args: '0x' },
  outgoingPayReq: 'lnbcrt…',
  incomingInvoice: { Fiber: 'fibd…' },
  paymentHash,
  amountSats: 10n,
  feeSats: 0n,
  status,
  ...extra,
});

describe('cch order machine', () => {
  it('moves forward on the two legs’ events and keeps the preimage', () => {
    let o = order('Pending');
    o = applyEvent(o, { kind: 'incoming', status: 'Received' })!;
    expect(o.status).toBe('IncomingAccepted');
    o = applyEvent(o, { kind: 'outgoing', status: 'Inflight' })!;
    expect(o.status).toBe('OutgoingInFlight');
    o = applyEvent(o, { kind: 'outgoing', status: 'Success', preimage })!;
    expect(o).toMatchObject({ status: 'OutgoingSuccess', paymentPreimage: preimage });
    o = applyEvent(o, { kind: 'incoming', status: 'Paid' })!;
    expect(o.status).toBe('Success');
  });

  it('a repeated status is no change; a payment that succeeds at once skips OutgoingInFlight', () => {
    expect(applyEvent(order('Pending'), { kind: 'incoming', status: 'Open' })).toBeUndefined();
    expect(
      applyEvent(order('IncomingAccepted'), { kind: 'outgoing', status: 'Success', preimage })?.status,
    ).toBe('OutgoingSuccess');
  });

  it('refuses moves backwards or skipping ahead, and anything after Success', () => {
    expect(() => applyEvent(order('Pending'), { kind: 'incoming', status: 'Paid' })).toThrow(
      'Invalid transition from Pending to Success',
    );
    expect(() => applyEvent(order('OutgoingInFlight'), { kind: 'incoming', status: 'Received' })).toThrow(
      /Invalid transition/,
    );
    expect(() => applyEvent(order('Success'), { kind: 'outgoing', status: 'Failed' })).toThrow(
      'Invalid transition from Success to Failed',
    );
  });

  it('fails from any status but Success, with the reason', () => {
    for (const s of ['Pending', 'IncomingAccepted', 'OutgoingInFlight', 'OutgoingSuccess'] as const) {
      const o = applyEvent(order(s), { kind: 'outgoing', status: 'Failed', failureReason: 'no route' });
      expect(o).toMatchObject({ status: 'Failed', failureReason: 'no route' });
    }
    expect(applyEvent(order('Pending'), { kind: 'incoming', status: 'Expired' })?.failureReason).toBe(
      'incoming invoice failed: Expired',
    );
  });

  it('a success needs the preimage of the payment hash (SHA-256)', () => {
    expect(() => applyEvent(order('OutgoingInFlight'), { kind: 'outgoing', status: 'Success' })).toThrow(
      'Expect preimage in settled payment but missing',
    );
    expect(() =>
      applyEvent(order('OutgoingInFlight'), {
        kind: 'outgoing',
        status: 'Success',
        preimage: `0x${'cd'.repeat(32)}`,
      }),
    ).toThrow('Preimage hash mismatch');
  });

  it('starts the actions of each status; a restart also follows the incoming side again', () => {
    expect(actionsOnEntering(order('Pending'))).toEqual(['TrackIncomingInvoice']);
    expect(actionsOnEntering(order('IncomingAccepted'))).toEqual([
      'SendOutgoingPayment',
      'TrackOutgoingPayment',
    ]);
    expect(actionsOnEntering(order('OutgoingSuccess'))).toEqual(['SettleIncomingInvoice']);
    expect(actionsOnEntering(order('Success'))).toEqual([]);
    expect(actionsOnEntering(order('Failed'))).toEqual(['CancelIncomingInvoice']);
    expect(actionsOnEntering(order('Failed', { incomingCancelled: true }))).toEqual([]);
    expect(actionsOnEntering(order('Failed', { keepIncoming: true }))).toEqual([]);
    expect(actionsOnStarting(order('OutgoingInFlight'))).toEqual([
      'TrackOutgoingPayment',
      'TrackIncomingInvoice',
    ]);
  });

  it('expires once created_at + expiry_delta_seconds has passed', () => {
    expect(isExpiredAt(order('Pending'), 1100)).toBe(false);
    expect(isExpiredAt(order('Pending'), 1101)).toBe(true);
  });
});
