/**
 * Payment sessions as the service leaves them when they end — the settled payments of
 * `settled.test.ts` and of the Postgres comparison (`test/store/postgres.test.ts`).
 */
import { randomBytes } from 'node:crypto';
import type { Attempt, PaymentSession } from '../../src/payment/session.ts';

export const hex = (n: number, prefix = true) => `${prefix ? '0x' : ''}${randomBytes(n).toString('hex')}`;
const pubkey = () => `02${hex(32, false)}`;
const outpoint = (index = 0) => `${hex(32)}${Buffer.from([index, 0, 0, 0]).toString('hex')}`;
export const SOURCE = pubkey();

export function attempt(n: number, status: Attempt['status'], hops: number, amount: bigint): Attempt {
  return {
    id: hex(16, false),
    n,
    status,
    route: Array.from({ length: hops }, (_, i) => ({
      target: pubkey(),
      channelOutpoint: outpoint(i),
      amountReceived: amount + BigInt(hops - 1 - i) * 10n,
    })),
    fee: BigInt(hops - 1) * 10n,
    sharedSecrets: Array.from({ length: hops }, () => hex(32)),
    error: status === 'Failed' ? 'TemporaryChannelFailure' : null,
    onionKey: pubkey(),
  };
}

/** A session as the service leaves it, ended `status` after `attempts`. */
export function session(
  o: Partial<PaymentSession> & { attempts: Attempt[] },
  request: object = {},
): PaymentSession {
  const paymentHash = hex(32);
  const preimage = hex(32);
  return {
    paymentHash,
    status: 'Success',
    createdAt: 1_795_000_000_000,
    lastUpdatedAt: 1_795_000_000_312,
    failedError: null,
    fee: 10n,
    tryLimit: 5,
    preimage,
    request: {
      targetPubkey: pubkey(),
      amount: 10_000n,
      paymentHash,
      preimage: null,
      finalTlcExpiryDelta: 86_400_000n,
      tlcExpiryLimit: 1_209_600_000n,
      maxFeeAmount: 50n,
      maxParts: 12n,
      allowMpp: false,
      keysend: false,
      udtTypeScript: null,
      allowSelfPayment: false,
      customRecords: null,
      hopHints: [],
      hashAlgorithm: 'ckb_hash',
      invoice: `fibd100001${'q'.repeat(300)}`,
      dryRun: false,
      timeout: null,
      trampolineHops: null,
      ...request,
    },
    ...o,
  };
}

export const SESSIONS: Record<string, () => PaymentSession> = {
  'an invoice paid over two hops': () => session({ attempts: [attempt(1, 'Success', 2, 10_000n)] }),
  'a keysend with custom records, after a failed try': () =>
    session(
      { attempts: [attempt(1, 'Failed', 3, 10_000n), attempt(2, 'Success', 2, 10_000n)] },
      { keysend: true, invoice: null, customRecords: { '0x1': '0x0102', '0x10000': hex(40) } },
    ),
  'an MPP payment in two parts of a UDT': () =>
    session(
      {
        fee: 40n,
        attempts: [
          attempt(1, 'Success', 2, 6_000n),
          attempt(2, 'Failed', 1, 4_000n),
          attempt(3, 'Success', 3, 4_000n),
        ],
      },
      {
        allowMpp: true,
        udtTypeScript: { code_hash: hex(32), hash_type: 'type', args: hex(20) },
        amount: (1n << 100n) + 1n,
      },
    ),
  'a payment that failed for good': () =>
    session({
      status: 'Failed',
      preimage: null,
      failedError: 'IncorrectOrUnknownPaymentDetails',
      lastErrorCode: 'IncorrectOrUnknownPaymentDetails',
      attempts: [attempt(1, 'Failed', 2, 10_000n)],
    }),
  'a payment no route could carry': () =>
    session({
      status: 'Failed',
      preimage: null,
      fee: 0n,
      failedError: 'Send payment error: Failed to build route, PathFind error: no path found',
      attempts: [],
    }),
};
