/**
 * The CKB a side of a channel keeps back for its own settlement cell (its "reserve"). Two rules,
 * chosen by what the peer said in `Init`:
 * - `strand` (a peer with Strand's channel-rules feature bit): the seed's — the occupied capacity
 *   of a cell with the side's shutdown script (plus the UDT type and 16 data bytes for a UDT
 *   channel) and 1 CKB of fee: 62 CKB for a default lock. What a side may not spend below is
 *   `SIDE_FLOOR` (tx.ts), checked on every TLC instead.
 * - `fnn` (any other peer, e.g. fnn v0.8): fnn's own — the same cell with its lock args padded to
 *   the commitment lock's 57 bytes, plus 1 CKB (`DEFAULT_MIN_SHUTDOWN_FEE`): 99 CKB for a default
 *   lock. fnn refuses an OpenChannel or AcceptChannel whose reserve is below the padded cell
 *   ("Reserved CKB amount … is less than 9800000000").
 */
import { ccc } from '@ckb-ccc/core';
import { CKB } from './tx.ts';

export type ChannelRules = 'strand' | 'fnn';

/** The commitment lock's args length: the least lock a settlement cell can carry. */
const COMMITMENT_LOCK_ARGS = 57;

export function reserveFor(
  shutdownScript: ccc.ScriptLike,
  udt: ccc.ScriptLike | null | undefined,
  rules: ChannelRules,
): bigint {
  const lock = ccc.Script.from(shutdownScript);
  const padded =
    rules === 'fnn' && ccc.bytesFrom(lock.args).length < COMMITMENT_LOCK_ARGS
      ? ccc.Script.from({ ...lock, args: new Uint8Array(COMMITMENT_LOCK_ARGS) })
      : lock;
  const out = ccc.CellOutput.from({ capacity: 0n, lock: padded, type: udt ?? undefined });
  return BigInt(out.occupiedSize + (udt ? 16 : 0)) * CKB + CKB;
}
