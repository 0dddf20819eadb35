import { ccc } from '@ckb-ccc/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ChainTxError } from '../../src/devchain/errors.ts';
import { encodeSince } from '../../src/devchain/since.ts';
import type { ViewCell } from '../../src/devchain/validate.ts';
import {
  buildTx,
  CKB,
  cellsOf,
  KEY_A,
  KEY_B,
  lockOf,
  openTestChain,
  simpleTransfer,
  type TestChain,
} from './helpers.ts';

let t: TestChain;
beforeEach(() => {
  t = openTestChain();
});
afterEach(() => t.close());

function rejects(fn: () => unknown, code: number, text: string | RegExp): void {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ChainTxError);
    expect((e as ChainTxError).code).toBe(code);
    expect((e as ChainTxError).message).toMatch(text);
    return;
  }
  throw new Error('expected a rejection');
}

const cellA = () => cellsOf(t.chain, lockOf(KEY_A))[0] as ViewCell;

describe('dev chain ledger rules', () => {
  it('accepts a signed transfer and commits it in the next block', () => {
    const tx = simpleTransfer(t.chain, KEY_A, lockOf(KEY_B), 100n * CKB);
    const hash = t.chain.sendTransaction(tx);
    expect(t.chain.transaction(hash)?.status).toBe('pending');
    t.chain.generateBlock();
    expect(t.chain.transaction(hash)?.status).toBe('committed');
    expect(t.chain.liveCell({ txHash: hash, index: 0 })).toMatchObject({ output: { capacity: 100n * CKB } });
  });

  it('rejects an unknown input', () => {
    const fake = { ...cellA(), outPoint: ccc.OutPoint.from({ txHash: `0x${'ee'.repeat(32)}`, index: 3 }) };
    const tx = buildTx(t.chain, {
      inputs: [{ cell: fake }],
      outputs: [{ lock: lockOf(KEY_A), capacity: 100n * CKB }],
    });
    rejects(
      () => t.chain.sendTransaction(tx),
      -301,
      `Resolve failed Unknown(OutPoint(0x${'ee'.repeat(32)}03000000))`,
    );
  });

  it('rejects an input already spent on chain', () => {
    const first = simpleTransfer(t.chain, KEY_A, lockOf(KEY_B), 100n * CKB);
    const spent = cellA();
    t.chain.sendTransaction(first);
    t.chain.generateBlock();
    const again = buildTx(t.chain, {
      inputs: [{ cell: spent }],
      outputs: [{ lock: lockOf(KEY_A), capacity: 100n * CKB }],
      keys: [KEY_A],
    });
    rejects(() => t.chain.sendTransaction(again), -301, /Resolve failed Dead\(OutPoint/);
  });

  it('rejects a double spend within the mempool', () => {
    const cell = cellA();
    const a = buildTx(t.chain, {
      inputs: [{ cell }],
      outputs: [{ lock: lockOf(KEY_B), capacity: 100n * CKB }],
      keys: [KEY_A],
    });
    const b = buildTx(t.chain, {
      inputs: [{ cell }],
      outputs: [{ lock: lockOf(KEY_A), capacity: 200n * CKB }],
      keys: [KEY_A],
    });
    t.chain.sendTransaction(a);
    rejects(() => t.chain.sendTransaction(b), -301, /Resolve failed Dead/);
  });

  it('rejects the same transaction twice', () => {
    const tx = simpleTransfer(t.chain, KEY_A, lockOf(KEY_B), 100n * CKB);
    t.chain.sendTransaction(tx);
    rejects(() => t.chain.sendTransaction(tx), -1107, /already exists in transaction_pool/);
  });

  it('rejects an output below its occupied capacity', () => {
    const cell = cellA();
    const tx = buildTx(t.chain, {
      inputs: [{ cell }],
      outputs: [
        { lock: lockOf(KEY_B), capacity: 60n * CKB },
        { lock: lockOf(KEY_A), capacity: cell.output.capacity - 61n * CKB },
      ],
      keys: [KEY_A],
    });
    rejects(
      () => t.chain.sendTransaction(tx),
      -302,
      'InsufficientCellCapacity(Outputs[0]): expected occupied capacity (0x16b969d00) <= capacity (0x165a0bc00)',
    );
  });

  it('rejects outputs exceeding inputs', () => {
    const cell = cellA();
    const tx = buildTx(t.chain, {
      inputs: [{ cell }],
      outputs: [{ lock: lockOf(KEY_B), capacity: cell.output.capacity + 1n }],
      keys: [KEY_A],
    });
    rejects(
      () => t.chain.sendTransaction(tx),
      -302,
      /OutputsSumOverflow: expected outputs capacity \(0x[0-9a-f]+\) <= inputs/,
    );
  });

  it('rejects an unknown cell dep, a bad dep group and an unknown header dep', () => {
    const cell = cellA();
    const outputs = [{ lock: lockOf(KEY_A), capacity: cell.output.capacity - 1000n }];
    const unknownDep = buildTx(t.chain, {
      inputs: [{ cell }],
      outputs,
      cellDeps: [{ outPoint: { txHash: `0x${'dd'.repeat(32)}`, index: 0 }, depType: 'code' }],
      keys: [KEY_A],
    });
    rejects(() => t.chain.sendTransaction(unknownDep), -301, /Resolve failed Unknown\(OutPoint\(0xdddd/);
    const notAGroup = buildTx(t.chain, {
      inputs: [{ cell }],
      outputs,
      cellDeps: [{ outPoint: cell.outPoint, depType: 'depGroup' }],
      keys: [KEY_A],
    });
    rejects(() => t.chain.sendTransaction(notAGroup), -301, /Resolve failed InvalidDepGroup/);
    const badHeader = buildTx(t.chain, {
      inputs: [{ cell }],
      outputs,
      headerDeps: [`0x${'cc'.repeat(32)}`],
      keys: [KEY_A],
    });
    rejects(() => t.chain.sendTransaction(badHeader), -301, /InvalidHeader/);
  });

  it('rejects a script whose code is not among the cell deps', () => {
    const cell = cellA();
    const tx = buildTx(t.chain, {
      inputs: [{ cell }],
      outputs: [{ lock: lockOf(KEY_A), capacity: cell.output.capacity - 1000n }],
      cellDeps: [],
      keys: [KEY_A],
    });
    rejects(() => t.chain.sendTransaction(tx), -302, /Inputs\[0\]\.Lock, cause: ScriptNotFound/);
  });

  it('rejects a transaction above the pool size limit', () => {
    const tx = simpleTransfer(t.chain, KEY_A, lockOf(KEY_B), 100n * CKB);
    tx.witnesses.push(ccc.hexFrom(new Uint8Array(520_000)));
    rejects(() => t.chain.sendTransaction(tx), -1110, /Transaction size \d+ exceeded maximum limit 512000/);
  });

  it('rejects malformed shapes: no inputs, data length mismatch, wrong version', () => {
    const cell = cellA();
    const base = buildTx(t.chain, {
      inputs: [{ cell }],
      outputs: [{ lock: lockOf(KEY_A), capacity: 100n * CKB }],
      keys: [KEY_A],
    });
    const noInputs = base.clone();
    noInputs.inputs = [];
    rejects(() => t.chain.sendTransaction(noInputs), -302, 'Empty(Inputs)');
    const mismatch = base.clone();
    mismatch.outputsData = [];
    rejects(() => t.chain.sendTransaction(mismatch), -302, /OutputsDataLengthMismatch/);
    const v1 = base.clone();
    v1.version = 1n;
    rejects(() => t.chain.sendTransaction(v1), -302, 'MismatchedVersion: expected 0, got 1');
  });
});

describe('since', () => {
  /** A self-transfer of A's first cell with the given since on its input. */
  const withSince = (since: bigint, cell = cellA()) =>
    buildTx(t.chain, {
      inputs: [{ cell, since }],
      outputs: [{ lock: lockOf(KEY_A), capacity: cell.output.capacity - 1000n }],
      keys: [KEY_A],
    });
  const immature = /Immature\(Inputs\[0\]\): the transaction is immature/;

  it('absolute block number', () => {
    const tx = withSince(encodeSince({ relative: false, metric: 'block', value: 5n }));
    rejects(() => t.chain.sendTransaction(tx), -302, immature);
    for (let i = 0; i < 3; i++) t.chain.generateBlock(); // tip 4: next block is 5
    expect(t.chain.sendTransaction(tx)).toBe(tx.hash());
  });

  it('absolute epoch with a fraction', () => {
    // epoch 1, 5/10 → block 15 on a 10-block epoch chain
    const tx = withSince(
      encodeSince({ relative: false, metric: 'epoch', value: 1n | (5n << 24n) | (10n << 40n) }),
    );
    for (let i = 0; i < 12; i++) t.chain.generateBlock(); // tip 13
    rejects(() => t.chain.sendTransaction(tx), -302, immature);
    t.chain.generateBlock(); // tip 14: next 15
    expect(t.chain.sendTransaction(tx)).toBe(tx.hash());
  });

  it('absolute timestamp against the median time', () => {
    const at = t.clock.now / 1000n + 100n;
    const tx = withSince(encodeSince({ relative: false, metric: 'timestamp', value: at }));
    rejects(() => t.chain.sendTransaction(tx), -302, immature);
    // The median of the last 37 blocks must pass `at`: produce enough blocks past it.
    t.clock.now += 200_000n;
    for (let i = 0; i < 3; i++) t.chain.generateBlock();
    expect(t.chain.medianTime(t.chain.tipHash)).toBeGreaterThanOrEqual(at * 1000n);
    expect(t.chain.sendTransaction(tx)).toBe(tx.hash());
  });

  it('relative block number counts from the block that committed the cell', () => {
    const tx = withSince(encodeSince({ relative: true, metric: 'block', value: 3n })); // cell in block 1
    t.chain.generateBlock(); // tip 2
    rejects(() => t.chain.sendTransaction(tx), -302, immature);
    t.chain.generateBlock(); // tip 3: next 4 = 1 + 3
    t.chain.sendTransaction(tx);
  });

  it('relative epoch', () => {
    const tx = withSince(encodeSince({ relative: true, metric: 'epoch', value: 1n })); // one whole epoch
    for (let i = 0; i < 8; i++) t.chain.generateBlock(); // tip 9: next 10 = (1,0,10); cell at (0,1,10)
    rejects(() => t.chain.sendTransaction(tx), -302, immature);
    t.chain.generateBlock(); // next 11 = (1,1,10)
    t.chain.sendTransaction(tx);
  });

  it('relative timestamp from the committing block', () => {
    const tx = withSince(encodeSince({ relative: true, metric: 'timestamp', value: 60n }));
    rejects(() => t.chain.sendTransaction(tx), -302, immature);
    t.clock.now += 120_000n;
    for (let i = 0; i < 3; i++) t.chain.generateBlock();
    t.chain.sendTransaction(tx);
  });

  it('relative since on a cell still in the mempool is immature', () => {
    const parent = simpleTransfer(t.chain, KEY_A, lockOf(KEY_A), 100n * CKB);
    const h = t.chain.sendTransaction(parent);
    const child = buildTx(t.chain, {
      inputs: [
        {
          cell: {
            ...(cellA() as ViewCell),
            outPoint: ccc.OutPoint.from({ txHash: h, index: 0 }),
            output: parent.outputs[0] as ccc.CellOutput,
          },
          since: encodeSince({ relative: true, metric: 'block', value: 0n }) | 1n,
        },
      ],
      outputs: [{ lock: lockOf(KEY_A), capacity: 100n * CKB - 1000n }],
      keys: [KEY_A],
    });
    rejects(() => t.chain.sendTransaction(child), -302, immature);
  });

  it('invalid since flags and malformed epochs', () => {
    // ccc normalises a since when building a CellInput, so set the raw value afterwards.
    const raw = (since: bigint) => {
      const tx = withSince(1n);
      (tx.inputs[0] as ccc.CellInput).since = since;
      return tx;
    };
    rejects(
      () => t.chain.sendTransaction(raw(1n << 56n)),
      -302,
      'InvalidSince(Inputs[0]): the since field is invalid',
    );
    rejects(() => t.chain.sendTransaction(raw(3n << 61n)), -302, /InvalidSince/);
    const badEpoch = encodeSince({
      relative: false,
      metric: 'epoch',
      value: 1n | (11n << 24n) | (10n << 40n),
    });
    rejects(() => t.chain.sendTransaction(raw(badEpoch)), -302, /InvalidSince/);
  });
});
