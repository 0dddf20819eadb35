/**
 * BOLT 11 payment requests through the `bolt11` library (decode checks the signature by
 * recovering the payee key, as LND and `lightning_invoice` do), reduced to what the hub checks.
 */
import bolt11 from 'bolt11';

/** The Bitcoin network a Fiber chain swaps with (fnn's `expected_ln_currency`). */
export const LN_NETWORK_OF_CURRENCY = {
  Fibb: { name: 'Bitcoin', bech32: 'bc' },
  Fibt: { name: 'BitcoinTestnet', bech32: 'tb' },
  Fibd: { name: 'Regtest', bech32: 'bcrt' },
} as const;

const NAME_OF_BECH32: Record<string, string> = {
  bc: 'Bitcoin',
  tb: 'BitcoinTestnet',
  bcrt: 'Regtest',
  tbs: 'Signet',
  sb: 'Simnet',
};

/** The `bolt11` library's network record for an HRP prefix (it knows `bc` and `tb` by itself). */
export const BTC_NETWORKS: Record<string, bolt11.Network> = {
  bc: { bech32: 'bc', pubKeyHash: 0x00, scriptHash: 0x05, validWitnessVersions: [0, 1] },
  tb: { bech32: 'tb', pubKeyHash: 0x6f, scriptHash: 0xc4, validWitnessVersions: [0, 1] },
  bcrt: { bech32: 'bcrt', pubKeyHash: 0x6f, scriptHash: 0xc4, validWitnessVersions: [0, 1] },
};

/** BOLT 11's defaults when the tags are absent. */
const DEFAULT_EXPIRY_SECONDS = 3600;
const DEFAULT_MIN_FINAL_CLTV = 18;

export interface DecodedPayReq {
  /** `Bitcoin`, `BitcoinTestnet`, `Regtest`, `Signet`, … */
  network: string;
  paymentHash: string;
  amountMsat?: bigint;
  timestamp: number;
  /** Seconds since the epoch. */
  expiresAt: number;
  minFinalCltvExpiryDelta: number;
  payee?: string;
}

export class PayReqError extends Error {}

export function decodePayReq(payReq: string): DecodedPayReq {
  let d: bolt11.PaymentRequestObject;
  try {
    // The prefix names the network; a regtest one needs the record passed in.
    const m = /^ln([a-z]+?)(\d|$|1)/i.exec(payReq);
    const net = m ? BTC_NETWORKS[m[1]!.toLowerCase()] : undefined;
    d = bolt11.decode(payReq, net);
  } catch (e) {
    throw new PayReqError(`BTC invoice parse error: ${(e as Error).message}`);
  }
  const tag = (name: string) => d.tags.find((t) => t.tagName === name)?.data;
  const hash = tag('payment_hash');
  if (typeof hash !== 'string') throw new PayReqError('BTC invoice parse error: no payment hash');
  const timestamp = d.timestamp ?? 0;
  const expiry = tag('expire_time');
  const cltv = tag('min_final_cltv_expiry');
  const bech32 = d.network?.bech32 ?? '';
  return {
    network: NAME_OF_BECH32[bech32] ?? bech32,
    paymentHash: `0x${hash}`,
    amountMsat: d.millisatoshis ? BigInt(d.millisatoshis) : undefined,
    timestamp,
    expiresAt: timestamp + (typeof expiry === 'number' ? expiry : DEFAULT_EXPIRY_SECONDS),
    minFinalCltvExpiryDelta: typeof cltv === 'number' ? cltv : DEFAULT_MIN_FINAL_CLTV,
    payee: d.payeeNodeKey,
  };
}
