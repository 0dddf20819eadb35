import { ccc } from '@ckb-ccc/core';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChainTxError } from '../../src/devchain/errors.ts';
import type { ViewCell } from '../../src/devchain/validate.ts';
import {
  buildTx,
  CKB,
  cellsOf,
  KEY_A,
  KEY_B,
  lockOf,
  openTestChain,
  type TestChain,
  udtCellsOf,
  udtData,
} from './helpers.ts';

const KEY_C = new Uint8Array(32).fill(0xc3);
const KEYS = [KEY_A, KEY_B, KEY_C];

function totals(t: TestChain): { capacity: bigint; udt: bigint } {
  let capacity = 0n;
  let udt = 0n;
  for (const r of t.chain.db
    .prepare('SELECT capacity, type_code_hash, data FROM dc_cells WHERE spent_by IS NULL')
    .iterate() as Iterable<{
    capacity: string;
    type_code_hash: string | null;
    data: Buffer;
  }>) {
    capacity += BigInt(r.capacity);
    if (r.type_code_hash === t.chain.scripts.test_udt.codeHash)
      udt += ccc.numLeFromBytes(r.data.subarray(0, 16));
  }
  return { capacity, udt };
}

/** A transfer of `ckb` and `udt` from one key to another, change back; null when it cannot be built. */
function transfer(t: TestChain, from: Uint8Array, to: Uint8Array, ckb: bigint, udt: bigint, fee: bigint) {
  const cell = cellsOf(t.chain, lockOf(from)).find(
    (c) => c.output.capacity >= ckb + fee + 61n * CKB + 142n * CKB,
  );
  if (!cell) return null;
  const inputs: { cell: ViewCell }[] = [{ cell }];
  const outputs: { lock: ccc.Script; capacity: bigint; type?: ccc.ScriptLike; data?: ccc.Hex }[] = [
    { lock: lockOf(to), capacity: ckb },
  ];
  let change = cell.output.capacity - ckb - fee;
  const deps = [...t.chain.scripts.secp256k1_blake160_sighash_all.cellDeps];
  if (udt > 0n) {
    const u = udtCellsOf(t.chain, lockOf(from)).find(
      (c) => ccc.numLeFromBytes(c.data.subarray(0, 16)) >= udt,
    );
    if (!u) return null;
    const have = ccc.numLeFromBytes(u.data.subarray(0, 16));
    inputs.push({ cell: u });
    outputs.push({
      lock: lockOf(to),
      capacity: 142n * CKB,
      type: t.chain.scripts.test_udt,
      data: udtData(udt),
    });
    outputs.push({
      lock: lockOf(from),
      capacity: u.output.capacity,
      type: t.chain.scripts.test_udt,
      data: udtData(have - udt),
    });
    change -= 142n * CKB;
    deps.push(...t.chain.scripts.simple_udt.cellDeps);
  }
  outputs.push({ lock: lockOf(from), capacity: change });
  return buildTx(t.chain, { inputs, outputs, keys: [from], cellDeps: deps });
}

describe('properties of the dev chain ledger', () => {
  let t: TestChain;
  beforeAll(() => {
    t = openTestChain({}, [
      { lock: lockOf(KEY_A), capacity: 100_000n * CKB, udt: 1000n },
      { lock: lockOf(KEY_B), capacity: 100_000n * CKB, udt: 1000n },
      { lock: lockOf(KEY_C), capacity: 100_000n * CKB, udt: 1000n },
    ]);
  });
  afterAll(() => t.close());

  it('random valid transfers preserve total capacity (less fees) and UDT supply', () => {
    const start = totals(t);
    let fees = 0n;
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            from: fc.nat(2),
            to: fc.nat(2),
            ckb: fc.bigInt(61n * CKB, 2000n * CKB),
            udt: fc.oneof(fc.constant(0n), fc.bigInt(1n, 300n)),
            fee: fc.bigInt(1000n, 5000n),
            mine: fc.boolean(),
          }),
          { minLength: 1, maxLength: 8 },
        ),
        (ops) => {
          for (const op of ops) {
            const tx = transfer(
              t,
              KEYS[op.from] as Uint8Array,
              KEYS[op.to] as Uint8Array,
              op.ckb,
              op.udt,
              op.fee,
            );
            if (!tx) continue;
            try {
              t.chain.sendTransaction(tx);
              fees += op.fee;
            } catch (e) {
              // The only acceptable rejection: a cell already spent by a pending transaction.
              expect((e as ChainTxError).message).toMatch(/Resolve failed Dead/);
            }
            if (op.mine) t.chain.generateBlock();
          }
          t.chain.generateBlock();
          const now = totals(t);
          expect(now.capacity + fees).toBe(start.capacity);
          expect(now.udt).toBe(start.udt);
        },
      ),
      { numRuns: 25 },
    );
  });

  it('random byte mutations of a valid transaction are rejected, never crash, never redirect value', () => {
    t.chain.generateBlock();
    const valid = transfer(t, KEY_A, KEY_B, 100n * CKB, 10n, 2000n) as ccc.Transaction;
    const bytes = valid.toBytes();
    const originalOutputs = ccc.hexFrom(ccc.CellOutputVec.encode(valid.outputs));
    fc.assert(
      fc.property(fc.nat(bytes.length - 1), fc.integer({ min: 1, max: 255 }), (at, xor) => {
        const mutated = Uint8Array.from(bytes);
        mutated[at] = (mutated[at] as number) ^ xor;
        let tx: ccc.Transaction;
        try {
          tx = ccc.Transaction.fromBytes(mutated);
        } catch {
          return; // not even a transaction: a client could not submit it
        }
        try {
          t.chain.dryRun(tx);
        } catch (e) {
          expect(e).toBeInstanceOf(ChainTxError);
          return;
        }
        // Accepted: then nothing that moves value may differ from what A signed.
        expect(ccc.hexFrom(ccc.CellOutputVec.encode(tx.outputs))).toBe(originalOutputs);
        expect(tx.hash()).toBe(valid.hash());
      }),
      { numRuns: 300 },
    );
    expect(t.chain.dryRun(valid).fee).toBe(2000n);
  });

  it('random structural mutations (amounts, locks, since, deps) are rejected or harmless', () => {
    const valid = transfer(t, KEY_B, KEY_C, 100n * CKB, 5n, 2000n) as ccc.Transaction;
    fc.assert(
      fc.property(
        fc.oneof(
          fc.record({
            kind: fc.constant('capacity' as const),
            i: fc.nat(3),
            delta: fc.bigInt(1n, 10n ** 12n),
          }),
          fc.record({
            kind: fc.constant('args' as const),
            i: fc.nat(3),
            b: fc.uint8Array({ minLength: 20, maxLength: 20 }),
          }),
          fc.record({ kind: fc.constant('since' as const), v: fc.bigInt(1n, (1n << 64n) - 1n) }),
          fc.record({
            kind: fc.constant('data' as const),
            i: fc.nat(3),
            b: fc.uint8Array({ maxLength: 40 }),
          }),
          fc.record({ kind: fc.constant('dropDep' as const), i: fc.nat(1) }),
          fc.record({ kind: fc.constant('witness' as const), b: fc.uint8Array({ maxLength: 120 }) }),
        ),
        (m) => {
          const tx = valid.clone();
          const out = tx.outputs[
            m.kind === 'capacity' || m.kind === 'args' || m.kind === 'data' ? m.i : 0
          ] as ccc.CellOutput;
          if (m.kind === 'capacity') out.capacity += m.delta;
          if (m.kind === 'args') out.lock = ccc.Script.from({ ...out.lock, args: m.b });
          if (m.kind === 'since') (tx.inputs[0] as ccc.CellInput).since = m.v;
          if (m.kind === 'data') tx.outputsData[m.i] = ccc.hexFrom(m.b);
          if (m.kind === 'dropDep') tx.cellDeps.splice(m.i, 1);
          if (m.kind === 'witness') tx.witnesses[0] = ccc.hexFrom(m.b);
          try {
            t.chain.dryRun(tx);
          } catch (e) {
            expect(e).toBeInstanceOf(ChainTxError);
            return;
          }
          // Accepted means the mutation was a no-op (e.g. the same bytes drawn).
          expect(tx.hash()).toBe(valid.hash());
        },
      ),
      { numRuns: 300 },
    );
  });
});
