/**
 * fnn mode: MuSig2 nonces on fnn's schedule (a peer without Strand's channel-rules bit), with a
 * durable count of the partial signatures each of our secret nonces produced. See docs/nonces.md.
 *
 * fnn pairs its own nonce with the last commitment nonce it *committed* of ours (`lcrn`) for every
 * session on the funding cell: the commitment it signs for us, the one it completes for itself,
 * its ClosingSigned. So a nonce of ours may have to sign more than once. The ledger allows two
 * partial signatures per secret nonce — two linear equations in three unknowns (k1, k2, key) —
 * and refuses a third: the use is counted in the channel state the shell persists before the
 * signature leaves, and the secret is erased with its second use.
 */
import { bytesToHex, hexToBytes } from '../codec/index.ts';
import { ChannelError } from './errors.ts';
import type { NoncePair } from './musig.ts';
import type { Channel, Hex } from './state.ts';
import { freshNonce, type MachineEnv } from './step.ts';

/** A secret nonce of ours and how many partial signatures it produced (secret `''` once spent). */
export interface NonceUse {
  public: Hex;
  secret: Hex;
  uses: number;
  /** The secret was erased by a restore from a backup copy (`spendAllNonces`), not by its uses. */
  restored?: true;
}

export interface FnnNonces {
  /**
   * Our commitment nonces in the order advertised: `current`, any advertised after it (not
   * committed by the peer yet) and the one `own` waits on.
   */
  mine: NonceUse[];
  /** The commitment nonce of ours the peer pairs with its own now (its `lcrn`). */
  current: Hex;
  /** The peer's commitment nonce our next funding-cell session pairs with. */
  theirs: Hex;
  /**
   * Our revocation nonces (advertised in Open/Accept, then one per RevokeAndAck we send), oldest
   * first. The head serves one revocation each way (ours, the peer's), then goes.
   */
  myRevoke: NonceUse[];
  /** The peer's revocation nonces by index: its nonce `n` serves the revocations of version n − 1. */
  theirRevoke: { n: bigint; nonce: Hex }[];
  /**
   * Our latest commitment, signed by the peer (its partial verified) and not completed: our
   * partial is made only to broadcast it (`completeForBroadcast`), so it costs a use only then.
   */
  own?: { partial: Hex; myNonce: Hex; theirNonce: Hex } | null;
}

export const MAX_NONCE_USES = 2;

/**
 * TEST ONLY: a weakened ledger, so that the hostile-peer test can show its key solver works
 * (`test/channel/hostile-peer.test.ts`). Null — the only value production ever sees — is the real
 * bound. Nothing in `src/` calls the setter (a test checks this), no config, RPC or environment
 * variable reaches it, and it refuses to run outside the test runner.
 */
let weakenedForTests: number | null = null;

/**
 * TEST ONLY: lets every secret nonce produce `uses` partial signatures (null restores
 * MAX_NONCE_USES). With 3 or more, a hostile peer can solve for the funding key: never call this
 * from `src/`.
 */
export function allowNonceReuseForTests(uses: number | null): void {
  if (!process.env.VITEST) throw new Error('allowNonceReuseForTests is for the test suite only');
  weakenedForTests = uses;
}

function maxUses(): number {
  return weakenedForTests ?? MAX_NONCE_USES;
}

export class NonceSpent extends ChannelError<'NonceSpent'> {
  constructor(message: string) {
    super('NonceSpent', message);
  }
}

export function isFnn(ch: Channel): boolean {
  return ch.rules === 'fnn';
}

export function fnnOf(ch: Channel): FnnNonces {
  if (!ch.fnn) throw new NonceSpent('fnn mode without a nonce ledger');
  return ch.fnn;
}

export function emptyFnn(theirs: Hex = '', theirRevoke?: Hex): FnnNonces {
  return {
    mine: [],
    current: '',
    theirs,
    myRevoke: [],
    theirRevoke: theirRevoke ? [{ n: 2n, nonce: theirRevoke }] : [],
  };
}

/** A fresh random nonce pair, recorded with no use (the caller advertises its public part). */
export function freshUse(ch: Channel, env: MachineEnv): NonceUse {
  const n = freshNonce(env, ch);
  return { public: bytesToHex(n.public), secret: bytesToHex(n.secret), uses: 0 };
}

/** Advertises a new commitment nonce (appended after the current one). */
export function advertiseCommitment(ch: Channel, env: MachineEnv): { ch: Channel; nonce: Uint8Array } {
  const f = fnnOf(ch);
  const n = freshUse(ch, env);
  return { ch: { ...ch, fnn: { ...f, mine: [...f.mine, n] } }, nonce: hexToBytes(n.public) };
}

/**
 * The peer committed our latest advertised nonce: it becomes current, the older ones are dropped
 * (the peer never pairs with them again, so their secrets go).
 */
export function promote(ch: Channel): Channel {
  const f = fnnOf(ch);
  const last = f.mine[f.mine.length - 1];
  if (!last) return ch;
  // The nonce our latest commitment waits on stays until that commitment is replaced.
  const mine = f.mine.filter((n) => n === last || n.public === f.own?.myNonce);
  return { ...ch, fnn: { ...f, mine, current: last.public } };
}

/**
 * Produces one partial signature with the nonce at the head of `list`: refused (NonceSpent) when
 * that nonce already produced MAX_NONCE_USES; the use is counted and, with the last allowed one,
 * the secret erased. `sign` gets the secret pair; what it returns is handed back.
 */
export function useNonce<T>(
  list: NonceUse[],
  sign: (n: NoncePair) => T,
  which?: Hex,
): { list: NonceUse[]; value: T; nonce: Hex } {
  const i = which === undefined ? 0 : list.findIndex((n) => n.public === which);
  const head = i >= 0 ? list[i] : undefined;
  if (!head)
    throw new NonceSpent(`fnn mode: our nonce ${which ?? ''} is not in the ledger; no signature with it`);
  if (head.restored && !head.secret)
    throw new NonceSpent(
      'fnn mode: our nonce was erased when the channel was restored from a backup (the live node may have used it since the copy); a new signature is refused',
    );
  if (!head.secret || head.uses >= maxUses())
    throw new NonceSpent('fnn mode: our nonce already signed twice; a third signature is refused');
  const value = sign({ secret: hexToBytes(head.secret), public: hexToBytes(head.public) });
  const uses = head.uses + 1;
  const spent: NonceUse = { public: head.public, secret: uses >= maxUses() ? '' : head.secret, uses };
  return { list: list.map((n, j) => (j === i ? spent : n)), value, nonce: head.public };
}

/** `useNonce` on our current commitment nonce (the peer's `lcrn`), or on the one given. */
export function useCommitmentNonce<T>(
  ch: Channel,
  sign: (n: NoncePair) => T,
  which?: Hex,
): { ch: Channel; value: T } {
  const f = fnnOf(ch);
  const r = useNonce(f.mine, sign, which ?? f.current);
  return { ch: { ...ch, fnn: { ...f, mine: r.list } }, value: r.value };
}

/**
 * `useNonce` on the head of our revocation nonces; a spent head goes, so the next one (advertised
 * in our latest RevokeAndAck) serves the next round.
 */
export function useRevokeNonce<T>(ch: Channel, sign: (n: NoncePair) => T): { ch: Channel; value: T } {
  const f = fnnOf(ch);
  const r = useNonce(f.myRevoke, sign);
  const myRevoke = r.list.filter((n) => n.uses < MAX_NONCE_USES);
  return { ch: { ...ch, fnn: { ...f, myRevoke } }, value: r.value };
}

/** The peer's revocation nonce number `n` (its nonce for the revocations of version n − 1). */
export function theirRevokeNonce(ch: Channel, n: bigint): Uint8Array {
  const x = fnnOf(ch).theirRevoke.find((r) => r.n === n);
  if (!x) throw new NonceSpent(`fnn mode: no revocation nonce ${n} of the peer`);
  return hexToBytes(x.nonce);
}

/**
 * A backup copy's ledger: every secret erased. The live node may have used a nonce after the
 * copy was made, so the copy's counts are not to be trusted; a restored fnn channel signs nothing
 * more with these nonces (it can still force-close with its stored, fully signed commitment).
 */
export function spendAllNonces(ch: Channel): Channel {
  if (!ch.fnn) return ch;
  const spend = (n: NonceUse): NonceUse => ({
    public: n.public,
    secret: '',
    uses: MAX_NONCE_USES,
    restored: true,
  });
  return { ...ch, fnn: { ...ch.fnn, mine: ch.fnn.mine.map(spend), myRevoke: ch.fnn.myRevoke.map(spend) } };
}
