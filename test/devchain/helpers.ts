/** Shared set-up for dev chain tests: a chain in a temp dir, known keys, transaction builders. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ccc } from '@ckb-ccc/core';
import { sighashLock } from '../../src/chain/address.ts';
import { bytesToHex, hexToBytes } from '../../src/codec/hex.ts';
import { lockArgsOf } from '../../src/crypto/secp256k1.ts';
import { signSighashAll } from '../../src/crypto/sighash.ts';
import { type DevAccount, DevChain, type DevChainOptions } from '../../src/devchain/chain.ts';
import type { ViewCell } from '../../src/devchain/validate.ts';

export const CKB = 100_000_000n;
export const KEY_A = hexToBytes(`0x${'a1'.repeat(32)}`);
export const KEY_B = hexToBytes(`0x${'b2'.repeat(32)}`);
export const lockOf = (sk: Uint8Array) => sighashLock(bytesToHex(lockArgsOf(sk)));

export interface TestChain {
  chain: DevChain;
  dir: string;
  clock: { now: bigint };
  close(): void;
}

/** A fresh chain; A and B funded with 10 000 CKB and 1 000 test UDT each. */
export function openTestChain(opts: Partial<DevChainOptions> = {}, accounts?: DevAccount[]): TestChain {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-devchain-'));
  const clock = { now: 1_700_000_000_000n };
  const chain = DevChain.open({
    dir,
    now: () => clock.now,
    epochLength: 10n,
    accounts: accounts ?? [
      { lock: lockOf(KEY_A), capacity: 10_000n * CKB, udt: 1000n },
      { lock: lockOf(KEY_B), capacity: 10_000n * CKB, udt: 1000n },
    ],
    ...opts,
  });
  return {
    chain,
    dir,
    clock,
    close() {
      chain.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Plain (no type) live cells of a lock. */
export function cellsOf(chain: DevChain, lock: ccc.Script): ViewCell[] {
  return chain.liveCellsByLock(lock);
}

/** Live cells with the test UDT under a lock. */
export function udtCellsOf(chain: DevChain, lock: ccc.Script): ViewCell[] {
  const rows = chain.db
    .prepare(
      'SELECT tx_hash, idx FROM dc_cells WHERE lock_args = ? AND type_code_hash IS NOT NULL AND spent_by IS NULL',
    )
    .all(lock.args) as { tx_hash: string; idx: number }[];
  return rows.map((r) => chain.liveCell({ txHash: r.tx_hash, index: r.idx }) as ViewCell);
}

export interface TxSpec {
  inputs: { cell: ViewCell; since?: bigint }[];
  outputs: { lock: ccc.ScriptLike; capacity: bigint; type?: ccc.ScriptLike; data?: ccc.HexLike }[];
  keys?: Uint8Array[];
  cellDeps?: ccc.CellDepLike[];
  headerDeps?: ccc.HexLike[];
}

/** Builds and signs (sighash-all, one group per key) a transaction over the dev chain's deps. */
export function buildTx(chain: DevChain, spec: TxSpec): ccc.Transaction {
  const tx = ccc.Transaction.from({
    version: 0,
    cellDeps: spec.cellDeps ?? chain.scripts.secp256k1_blake160_sighash_all.cellDeps,
    headerDeps: spec.headerDeps ?? [],
    inputs: spec.inputs.map((i) => ({ previousOutput: i.cell.outPoint, since: i.since ?? 0n })),
    outputs: spec.outputs.map((o) => ({ lock: o.lock, type: o.type, capacity: o.capacity })),
    outputsData: spec.outputs.map((o) => ccc.hexFrom(o.data ?? '0x')),
  });
  for (const sk of spec.keys ?? []) {
    const lock = lockOf(sk);
    const idx = spec.inputs.map((i, n) => (i.cell.output.lock.eq(lock) ? n : -1)).filter((n) => n >= 0);
    if (idx.length) signSighashAll(tx, idx, sk);
  }
  return tx;
}

/** Sends `amount` from the first plain cell of `from` to `to`, change back, 1000-shannon fee. */
export function simpleTransfer(
  chain: DevChain,
  from: Uint8Array,
  to: ccc.Script,
  amount: bigint,
): ccc.Transaction {
  const cell = cellsOf(chain, lockOf(from))[0] as ViewCell;
  return buildTx(chain, {
    inputs: [{ cell }],
    outputs: [
      { lock: to, capacity: amount },
      { lock: lockOf(from), capacity: cell.output.capacity - amount - 1000n },
    ],
    keys: [from],
  });
}

export function udtData(amount: bigint): ccc.Hex {
  return ccc.hexFrom(ccc.numLeToBytes(amount, 16));
}
