/**
 * Confirmation tracking: a transaction counts as confirmed once it is committed and the tip is
 * `confirmations` blocks past its block (the reference node traces funding transactions to
 * CKB_TX_TRACING_CONFIRMATIONS = 4). Polls the chain; a transaction the chain rejects ends the
 * wait with an error instead of hanging. A transaction seen committed that the chain then no
 * longer knows (or knows in another block) was reorganised out: the wait starts over, and the
 * caller may send it again (`onReorg`).
 */
import type { ChainClient } from './client.ts';
import { ChainError, chainErrorOf } from './errors.ts';

export const DEFAULT_CONFIRMATIONS = 4;

export interface TxConfirmation {
  status: 'unknown' | 'pending' | 'proposed' | 'committed' | 'rejected';
  blockNumber?: bigint;
  blockHash?: string;
  /** Blocks past the committing block (0 when just committed). */
  depth: number;
}

export class TxRejected extends chainErrorOf('TxRejected') {}

export async function txConfirmation(client: ChainClient, hash: string): Promise<TxConfirmation> {
  const r = await client.getTransaction(hash);
  if (!r) return { status: 'unknown', depth: 0 };
  const s = r.tx_status;
  if (s.status !== 'committed' || !s.block_number) return { status: s.status, depth: 0 };
  const blockNumber = BigInt(s.block_number);
  const tip = await client.tipBlockNumber();
  return {
    status: 'committed',
    blockNumber,
    blockHash: s.block_hash ?? undefined,
    depth: Number(tip - blockNumber),
  };
}

export interface WaitOptions {
  confirmations?: number;
  pollMs?: number;
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Called once per reorg seen (committed, then unknown or in another block): e.g. send it again. */
  onReorg?: (hash: string, previousBlockHash: string | undefined) => unknown;
}

/** Resolves when `hash` is `confirmations` blocks deep; rejects on rejection, timeout or abort. */
export async function waitForConfirmations(
  client: ChainClient,
  hash: string,
  opts: WaitOptions = {},
): Promise<TxConfirmation> {
  const need = opts.confirmations ?? DEFAULT_CONFIRMATIONS;
  const pollMs = opts.pollMs ?? 1000;
  const deadline = opts.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + opts.timeoutMs;
  let committedIn: string | undefined;
  for (;;) {
    opts.signal?.throwIfAborted();
    const c = await txConfirmation(client, hash);
    if (c.status === 'rejected') throw new TxRejected(`transaction ${hash} was rejected by the chain`);
    const movedBlock =
      c.status === 'committed' && committedIn !== undefined && (c.blockHash ?? '') !== committedIn;
    if (committedIn !== undefined && (c.status !== 'committed' || movedBlock)) {
      const previous = committedIn;
      committedIn = undefined;
      await opts.onReorg?.(hash, previous);
    }
    if (c.status === 'committed') committedIn = c.blockHash ?? '';
    if (c.status === 'committed' && c.depth >= need) return c;
    if (Date.now() > deadline)
      throw new ChainError(
        'NotConfirmed',
        `transaction ${hash} not confirmed in time (status ${c.status}, depth ${c.depth})`,
      );
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
