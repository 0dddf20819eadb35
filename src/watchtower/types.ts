/**
 * What a watchtower keeps per watched channel (`fiber-rpc.md` §1.8, `fiber-internals.md` §7):
 * funding and settlement keys, the latest local / remote / pending-remote settlement data, and
 * the latest revocation of the peer's commitments. Plain data, bigints inside, hex for bytes.
 */
export type Hex = string;

export interface SettlementTlcData {
  /** `{"Offered": id}` or `{"Received": id}`, from the watched node's side. */
  tlcId: { offered: boolean; id: bigint };
  hashAlgorithm: 'ckb_hash' | 'sha256';
  paymentAmount: bigint;
  paymentHash: Hex;
  /** Absolute unix ms. */
  expiry: bigint;
  /** 32-byte secret key that signs this TLC's unlock (0x hex). */
  localKey: Hex;
  /** 33-byte compressed key of the peer for this TLC (0x hex). */
  remoteKey: Hex;
}

export interface SettlementData {
  localAmount: bigint;
  remoteAmount: bigint;
  tlcs: SettlementTlcData[];
}

export interface RevocationData {
  /** The newest revoked version: any commitment with a version ≤ this one is revocable. */
  commitmentNumber: bigint;
  /** 64-byte aggregated Schnorr signature (0x hex). */
  aggregatedSignature: Hex;
  /** Molecule `CellOutput` of the revocation output (0x hex). */
  output: Hex;
  /** The output's data, raw (0x hex; the RPC carries it as molecule `Bytes`). */
  outputData: Hex;
}

export interface WatchedChannel {
  /** Base58 node id of the caller that registered it; `''` for the node itself. */
  nodeId: string;
  channelId: Hex;
  fundingUdtTypeScript: { code_hash: Hex; hash_type: string; args: Hex } | null;
  localSettlementKey: Hex;
  remoteSettlementKey: Hex;
  localFundingPubkey: Hex;
  remoteFundingPubkey: Hex;
  remoteSettlementData: SettlementData;
  pendingRemoteSettlementData: SettlementData;
  localSettlementData: SettlementData;
  revocationData: RevocationData | null;
}

export function toJsonText(v: unknown): string {
  return JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? { $big: x.toString() } : x));
}

export function fromJsonText<T>(text: string): T {
  return JSON.parse(text, (_k, v) =>
    v && typeof v === 'object' && typeof v.$big === 'string' && Object.keys(v).length === 1
      ? BigInt(v.$big)
      : v,
  ) as T;
}
