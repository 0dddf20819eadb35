/**
 * The persisted state of one channel: plain data (hex strings for bytes, but bytes for the TLCs'
 * onions; bigint for amounts), serialised to one JSON text per row (the onions apart:
 * `serializeChannelLean`). Names of states and flags are the seed's (`CHANNEL_READY`, flags as
 * arrays; docs/protocol.md, the table of names).
 */
import { bytesToHex, hexToBytes } from '../codec/index.ts';
import type { FnnNonces } from './fnn-nonces.ts';
import type { ChannelRules } from './reserve.ts';
import { packEntries, type UpdateLog, unpackEntries } from './update-log.ts';

export type Hex = string;

/** A pipelined channel's TLC state beyond its TLCs (`pipelined.ts`). */
export interface PipelinedState {
  /** Which updates each commitment holds (`update-log.ts`). */
  log: UpdateLog;
  /** Both balances when the log began; every commitment is these moved by the log's views. */
  base: { local: bigint; remote: bigint };
  /**
   * Our last CommitmentSigned and RevokeAndAck as sent (FiberMessage hex), for a peer that missed
   * them: a new signature would need the nonce the first one took.
   */
  sent?: { commit?: Hex; revoke?: Hex };
}

export const STATE_NAMES = [
  'NEGOTIATING_FUNDING',
  'COLLABORATING_FUNDING_TX',
  'SIGNING_COMMITMENT',
  'AWAITING_TX_SIGNATURES',
  'AWAITING_CHANNEL_READY',
  'CHANNEL_READY',
  'SHUTTING_DOWN',
  'CLOSED',
] as const;
export type StateName = (typeof STATE_NAMES)[number];

export type Flag =
  | 'OUR_INIT_SENT'
  | 'THEIR_INIT_SENT'
  | 'AWAITING_EXTERNAL_FUNDING'
  | 'AWAITING_REMOTE_TX_COLLABORATION_MSG'
  | 'PREPARING_LOCAL_TX_COLLABORATION_MSG'
  | 'OUR_TX_COMPLETE_SENT'
  | 'THEIR_TX_COMPLETE_SENT'
  | 'OUR_COMMITMENT_SIGNED_SENT'
  | 'THEIR_COMMITMENT_SIGNED_SENT'
  | 'OUR_TX_SIGNATURES_SENT'
  | 'THEIR_TX_SIGNATURES_SENT'
  | 'OUR_CHANNEL_READY'
  | 'THEIR_CHANNEL_READY'
  | 'OUR_SHUTDOWN_SENT'
  | 'THEIR_SHUTDOWN_SENT'
  | 'DROPPING_PENDING'
  | 'WAITING_COMMITMENT_CONFIRMATION'
  | 'COOPERATIVE'
  | 'UNCOOPERATIVE_LOCAL'
  | 'ABANDONED'
  | 'FUNDING_ABORTED'
  | 'UNCOOPERATIVE_REMOTE'
  | 'WAITING_ONCHAIN_SETTLEMENT'
  /** Strand: the peer's reestablish numbers prove our state outdated; our commitment is revoked (`outdated.ts`). */
  | 'LOCAL_STATE_OUTDATED'
  /** Strand: restored from a backup, not yet confirmed current by a reestablish (`checkpoint.ts`). */
  | 'RESTORED_FROM_BACKUP';

export interface ScriptData {
  codeHash: Hex;
  hashType: 'type' | 'data' | 'data1' | 'data2';
  args: Hex;
}

export interface CellDepData {
  outPoint: { txHash: Hex; index: string };
  depType: 'code' | 'depGroup';
}

export interface Nonce {
  secret: Hex;
  public: Hex;
}

export interface PartyParams {
  fundingPubkey: Hex;
  tlcBasepoint: Hex;
  /** Funding excluding the reserve (CKB) or the UDT amount. */
  fundingAmount: bigint;
  reserve: bigint;
  shutdownScript: ScriptData;
  maxTlcValueInFlight: bigint;
  maxTlcNumberInFlight: bigint;
}

/**
 * External funding (`open_channel_with_external_funding`): the opener's part comes from cells of a
 * lock the node cannot sign for. The funding tx is frozen with the peer, handed to the user, signed
 * off-node and submitted; only then are commitments signed (`external-funding.ts`).
 */
export interface ExternalFunding {
  /** Opener: the lock of the cells that pay the opener's part, and extra cell deps it needs. */
  lock?: ScriptData;
  cellDeps?: CellDepData[];
  /** Opener: the funder's inputs are the first `inputs` of the funding tx. */
  inputs?: number;
  /** When the unsigned tx was frozen (ms); the timeout counts from here, else from `createdAt`. */
  startedAt?: number;
  /** Opener: the funder's witnesses from the submitted tx, released only with our TxSignatures. */
  witnesses?: Hex[];
  /** The signed tx was submitted (opener) or announced by the peer's TxUpdate (acceptor). */
  submitted: boolean;
}

export interface Tlc {
  id: bigint;
  /** Offered by us (outbound) or by the peer (inbound). */
  offered: boolean;
  amount: bigint;
  paymentHash: Hex;
  /** Absolute unix ms. */
  expiry: bigint;
  /** 0 = ckb blake2b, 1 = sha256. */
  hashAlgorithm: number;
  /**
   * The onion packet as it came or went on the wire (6,566 bytes; empty when none: a dev
   * `add_tlc`, or left out of a stored state until `withOnions`). Bytes, not hex: it is read as
   * bytes by every user (the wire, the store, the peel) and never changes while the TLC lives, so
   * hex cost two conversions of 13 KB a TLC a side.
   */
  onion: Uint8Array;
  /** Announced in the round in progress, or in both commitments. */
  added: 'announced' | 'committed';
  /**
   * The commitment numbers (L, R) when the TLC was created, and the keys derived from them that
   * lock it in both commitments: ours and the peer's public keys (`tlc-keys.ts`). Absent on TLCs
   * of channels from before tweaked keys, which use the base keys.
   */
  createdAt?: { local: bigint; remote: bigint };
  localKey?: Hex;
  remoteKey?: Hex;
  removal?: { preimage?: Hex; error?: Hex; state: 'announced' | 'committed' };
  /**
   * Pipelined channels (`pipelined.ts`): the tweak both keys were made with, in place of the
   * per-commitment points of `createdAt` (`tlc-keys.ts`, `pipelinedTlcKeys`).
   */
  keyTag?: Hex;
}

/** Our round's start, as a step back restores it (`tlc.ts`, `ROUND_LOCAL`). */
export interface RoundSnapshot {
  localBalance: bigint;
  remoteBalance: bigint;
  nextTlcId: { offered: bigint; received: bigint };
  /** Received TLCs our round's RemoveTlcs marked removed (the AddTlcs are those from `nextTlcId.offered`). */
  removed: bigint[];
  /** Strand mode: the head of the peer's nonce pool, taken by our CommitmentSigned. */
  theirNonce?: Hex;
}

/** The TLC round in progress: updates + CommitmentSigned one way, RevokeAndAck + CommitmentSigned back, RevokeAndAck. */
export interface Round {
  initiator: 'local' | 'remote';
  /**
   * Local rounds: what stepping back needs if the peer's round collides (`tlc.ts`). A string in
   * states stored by earlier versions: the whole channel as it was (JSON, no onions).
   */
  before?: RoundSnapshot | string;
  /** Local initiator: the peer's RevokeAndAck / CommitmentSigned arrived. */
  gotRevoke?: boolean;
  gotCommit?: boolean;
}

export interface Channel {
  /** Current id: the temporary id until AcceptChannel, then the final one. */
  id: Hex;
  tempId: Hex;
  peer: string;
  isAcceptor: boolean;
  isPublic: boolean;
  state: StateName;
  flags: Flag[];
  createdAt: number;
  /** Node-local secret from which the channel keys derive. */
  seed: Hex;
  udt: ScriptData | null;
  /** The UDT's cell deps (from the whitelist), needed by every tx that moves the funding cell. */
  udtCellDeps?: CellDepData[];
  fundingFeeRate: bigint;
  commitmentFeeRate: bigint;
  delayEpoch: bigint;
  tlcExpiryDelta: bigint;
  tlcMinValue: bigint;
  tlcFeeProportionalMillionths: bigint;
  enabled: boolean;
  local: PartyParams;
  /** Present when the opener's part is funded externally (both sides know it from channel_flags). */
  external?: ExternalFunding;
  /** Absent until the peer's Open/Accept arrived. */
  remote?: PartyParams & {
    /**
     * The peer's latest per-commitment points, numbered (Open/Accept: 1 and 2; each RevokeAndAck
     * the next). Absent in channels stored before TLC keys were tweaked.
     */
    commitmentPoints?: { n: bigint; point: Hex }[];
  };
  /**
   * MuSig2 nonce pools, in the order advertised. A session where we complete (or, for the close,
   * sign with a pre-advertised nonce) takes the head of `mine`; a session where the peer does takes
   * the head of `theirs`. Both sides consume them in message order, so they agree.
   */
  nonces: { mine: Nonce[]; theirs: Hex[]; seen?: Hex[] };
  /**
   * The rules chosen at opening from the peer's Init (`reserve.ts`); absent = 'strand' (channels
   * stored before). With 'fnn' the MuSig2 nonces follow fnn's schedule (`fnn`, `fnn-nonces.ts`)
   * and `nonces` stays empty.
   */
  rules?: ChannelRules;
  fnn?: FnnNonces;
  /** Both nodes offered pipelined updates at opening: they start at CHANNEL_READY (`pipelined.ts`). */
  pipelinedUpdates?: boolean;
  /** Strand's pipelined TLC updates, once both sides agreed on them (`pipelined.ts`). */
  pipelined?: PipelinedState;
  /**
   * What we sent in the current/last TLC round, byte for byte, to replay after a reconnect:
   * our updates and CommitmentSigned, and our last RevokeAndAck (FiberMessage hex each).
   */
  cache?: { updates: Hex[]; commit: Hex | null; revoke: Hex | null };
  localBalance: bigint;
  remoteBalance: bigint;
  /** L: version of the peer's commitment we sign; R: version of ours. */
  commitmentNumbers: { local: bigint; remote: bigint };
  tlcs: Tlc[];
  /** Next id of a TLC we offer, and of one the peer offers (both sequential from 0). */
  nextTlcId: { offered: bigint; received: bigint };
  round?: Round | null;
  /**
   * We sent our ReestablishChannel on a new connection and the peer's has not come in yet: no
   * round starts and the peer's round messages are ignored until it does (`reestablish.ts`).
   */
  reestablishing?: boolean;
  /** Our updates stepped back after a collision, re-issued when the peer's round ends. */
  retry?: Hex[];
  /**
   * The latest revocation of the peer's commitments we hold: version, aggregated signature and
   * the part of the revoked commitment's lock args it signs (`revocationLockPrefix`, 28 bytes;
   * states stored before 2026-11-29 hold the whole args of the peer's next commitment, whose
   * first 28 bytes are the same).
   */
  revocation?: { version: bigint; signature: Hex; args: Hex } | null;
  /** The funding tx as it stands (molecule hex). */
  fundingTx: Hex | null;
  fundingTxHash: Hex | null;
  /** Our latest fully signed commitment tx (molecule hex, witness filled, no deps). */
  latestCommitmentTx: Hex | null;
  latestCommitmentTxHash: Hex | null;
  shutdownTxHash: Hex | null;
  /** The signed cooperative close as broadcast (molecule hex), kept to send again if lost. */
  closeTx?: Hex;
  failureDetail: string | null;
  /** Public channels: announcement nonces (ours used once) and signatures. */
  announcement?: {
    myNonce?: Nonce;
    theirNonce?: Hex | null;
    digest?: Hex;
    myPartial?: Hex;
    myNodeSignature?: Hex;
    theirPartial?: Hex;
    theirNodeSignature?: Hex;
    /** The aggregated ckb_signature, once both partials are in. */
    signature?: Hex;
  };
  /** Shutdown negotiation (close scripts and fee rates of each side) and the closing signatures. */
  shutdown?: {
    local?: { closeScript: ScriptData; feeRate: bigint };
    remote?: { closeScript: ScriptData; feeRate: bigint };
    /** The shutdown tx we signed (never sign another one with these nonces). */
    tx?: Hex;
    myNonce?: Hex;
    theirNonce?: Hex;
    myPartial?: Hex;
    theirPartial?: Hex;
    force?: boolean;
  };
}

/**
 * How a nonce the peer advertised is remembered (`nonces.seen`): its first 16 bytes, which tell
 * nonces apart as surely as the whole 66 (a collision needs 2^64 of the peer's own nonces) at a
 * quarter of the bytes in every state written. Entries stored whole by earlier versions compare
 * by the same prefix.
 */
export const seenKey = (nonce: Hex): Hex => nonce.slice(0, 34);

export function hasFlag(c: Channel, f: Flag): boolean {
  return c.flags.includes(f);
}

export function withFlag(c: Channel, f: Flag): Channel {
  return hasFlag(c, f) ? c : { ...c, flags: [...c.flags, f] };
}

/**
 * Shutting down with TLCs still to resolve: Shutdown sent or received, closing not signed yet
 * (no DROPPING_PENDING) and no commitment broadcast. TLC rounds go on in this state.
 */
export function resolvingPending(c: Channel): boolean {
  return (
    c.state === 'SHUTTING_DOWN' &&
    !c.shutdown?.force &&
    !hasFlag(c, 'DROPPING_PENDING') &&
    !hasFlag(c, 'WAITING_COMMITMENT_CONFIRMATION')
  );
}

/**
 * Our signed cooperative close is broadcast (and awaits confirmation): the channel ends with it.
 * No commitment of ours may be signed or broadcast any more: it would compete for the funding cell.
 */
export function coopCloseBroadcast(c: Channel): boolean {
  return c.state === 'SHUTTING_DOWN' && hasFlag(c, 'WAITING_COMMITMENT_CONFIRMATION') && !c.shutdown?.force;
}

export const PENDING_STATES: StateName[] = [
  'NEGOTIATING_FUNDING',
  'COLLABORATING_FUNDING_TX',
  'SIGNING_COMMITMENT',
  'AWAITING_TX_SIGNATURES',
  'AWAITING_CHANNEL_READY',
];

/** The channel's JSON, whole: bigints as `{ $big }`, onions as hex. */
export function serializeChannel(c: Channel): string {
  return JSON.stringify(c, (k, v) =>
    typeof v === 'bigint'
      ? { $big: v.toString() }
      : k === 'onion' && v instanceof Uint8Array
        ? bytesToHex(v)
        : packedLog(k, v),
  );
}

/** A pipelined channel's log entries, packed (`update-log.ts`); any other value as it is. */
function packedLog(k: string, v: unknown): unknown {
  return k === 'entries' && Array.isArray(v) ? packEntries(v) : v;
}

/**
 * The channel's JSON with every TLC's onion left out (`0x`). An onion is 6.5 KB that never
 * changes while its TLC lives, so it is kept once, apart from the state written on every event:
 * in its own table (`store.ts`) or, for a round's snapshot, in the live channel (`tlc.ts`).
 * `withOnions` puts them back.
 */
export function serializeChannelLean(c: Channel | (Omit<Channel, 'tlcs'> & { tlcs: string[] })): string {
  return JSON.stringify(c, leanReplacer);
}

/** bigint as `{ $big }`, onions left out (`0x`). */
export const leanReplacer = (k: string, v: unknown) =>
  typeof v === 'bigint' ? { $big: v.toString() } : k === 'onion' ? '0x' : packedLog(k, v);

/** A TLC's key among the channel's: the direction and the id (ids are per direction). */
export const tlcKey = (t: Pick<Tlc, 'offered' | 'id'>): string => `${t.offered ? 'o' : 'r'}${t.id}`;

/** The channel with each TLC's onion taken from `onions` (by `tlcKey`) where it has none. */
export function withOnions(ch: Channel, onions: ReadonlyMap<string, Uint8Array>): Channel {
  if (!onions.size) return ch;
  return {
    ...ch,
    tlcs: ch.tlcs.map((t) => {
      const onion = t.onion?.length ? undefined : onions.get(tlcKey(t));
      return onion?.length ? { ...t, onion } : t;
    }),
  };
}

/**
 * A channel's JSON read back (`{ "$big": "…" }` → bigint): plain `JSON.parse`, then one walk
 * replacing those objects — a third of the time of a reviver, which is called for every value (a
 * node with 10,000 channels parses them all on start).
 */
export function deserializeChannel(text: string): Channel {
  const ch = withBigints(JSON.parse(text)) as Channel | null;
  const log = ch?.pipelined?.log as { entries: unknown } | undefined;
  if (log && typeof log.entries === 'string') log.entries = unpackEntries(log.entries);
  // A list of TLC keys (a lean state row, `store.ts`) has no onions to read.
  if (ch && Array.isArray(ch.tlcs)) for (const t of ch.tlcs) if (t && typeof t === 'object') onionFromJson(t);
  return ch as Channel;
}

/** The onion of a TLC that has none (shared: nobody mutates a TLC's bytes). */
const EMPTY_ONION: Uint8Array = new Uint8Array(0);

/** A TLC read from JSON: its onion from hex (`0x` when left out) to bytes. */
function onionFromJson(t: Tlc): Tlc {
  const v = t.onion as unknown;
  if (typeof v === 'string') t.onion = v.length > 2 ? hexToBytes(v, 'onion') : EMPTY_ONION;
  return t;
}

function withBigints(v: unknown): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const x = v[i];
      if (x !== null && typeof x === 'object') v[i] = withBigints(x);
    }
    return v;
  }
  const o = v as Record<string, unknown>;
  if (typeof o.$big === 'string' && Object.keys(o).length === 1) return BigInt(o.$big);
  for (const k in o) {
    const x = o[k];
    if (x !== null && typeof x === 'object') o[k] = withBigints(x);
  }
  return o;
}

/**
 * One TLC's JSON without its onion (a row of `channel_tlcs`, `store.ts`): the text of
 * `JSON.stringify(t, leanReplacer)`, written field by field in the object's own order. A TLC row
 * is written about three times a payment on each side, and the replacer, a call back into
 * JavaScript for every value, made it ~3 µs a row against ~1.6 µs here (3.5 % of the payee's
 * busy time at 64 payments in flight, then 1.4 %). A value of a kind it does not write (anything
 * but bigints, booleans, finite numbers, plain strings and objects of those) takes the general
 * way.
 */
export function serializeTlcLean(t: Tlc): string {
  return leanObject(t as unknown as Record<string, unknown>, true) ?? JSON.stringify(t, leanReplacer);
}

/** Strings written between quotes as they are: nothing in them JSON would escape. */
const PLAIN = /^[\w.:-]*$/;
/** The keys of a TLC and of its nested objects, plain by construction (no test needed). */
const TLC_KEYS: ReadonlySet<string> = new Set([
  'id',
  'offered',
  'amount',
  'paymentHash',
  'expiry',
  'hashAlgorithm',
  'onion',
  'added',
  'createdAt',
  'local',
  'remote',
  'localKey',
  'remoteKey',
  'removal',
  'preimage',
  'error',
  'state',
  'keyTag',
]);

/** A flat object's lean JSON (`leanReplacer`'s rules), or undefined if it holds something else. */
function leanObject(o: Record<string, unknown>, nest: boolean): string | undefined {
  let out = '';
  for (const k in o) {
    const v = o[k];
    let s: string;
    if (!TLC_KEYS.has(k) && (k === 'entries' || !PLAIN.test(k))) return undefined;
    // The replacer's order: a bigint first, then any onion (even an undefined one), then the rest.
    if (typeof v === 'bigint') s = `{"$big":"${v}"}`;
    else if (k === 'onion') s = '"0x"';
    else if (v === undefined) continue;
    else if (typeof v === 'string') {
      if (!PLAIN.test(v)) return undefined;
      s = `"${v}"`;
    } else if (typeof v === 'boolean') s = v ? 'true' : 'false';
    else if (typeof v === 'number' && Number.isFinite(v)) s = String(v);
    else if (nest && typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype) {
      const inner = leanObject(v as Record<string, unknown>, false);
      if (inner === undefined) return undefined;
      s = inner;
    } else return undefined;
    out += `${out ? ',' : '{'}"${k}":${s}`;
  }
  return out ? `${out}}` : '{}';
}

export function deserializeTlc(text: string): Tlc {
  return onionFromJson(withBigints(JSON.parse(text)) as Tlc);
}
