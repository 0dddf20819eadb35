import { describe, expect, it } from 'vitest';
import { DevChain } from '../../src/devchain/chain.ts';
import type { ViewCell } from '../../src/devchain/validate.ts';
import { buildTx, CKB, cellsOf, KEY_A, KEY_B, lockOf, openTestChain, simpleTransfer } from './helpers.ts';

describe('dev chain persistence', () => {
  it('a restarted chain keeps blocks, cells and pending transactions', () => {
    const t = openTestChain();
    try {
      const mined = t.chain.sendTransaction(simpleTransfer(t.chain, KEY_A, lockOf(KEY_B), 100n * CKB));
      t.chain.generateBlock();
      const pending = t.chain.sendTransaction(simpleTransfer(t.chain, KEY_B, lockOf(KEY_A), 70n * CKB));
      const tip = t.chain.tip.number;
      const tipHash = t.chain.tipHash;
      const cellsB = cellsOf(t.chain, lockOf(KEY_B)).length;
      t.chain.close();

      const again = DevChain.open({ dir: t.dir, epochLength: 99n, now: () => t.clock.now });
      try {
        expect(again.genesisHash).toBe('0x677c33a40ddd906cdb6ca996d80081a0a6da2ff40050525da640d5c24d557614');
        expect(again.tip.number).toBe(tip);
        expect(again.tipHash).toBe(tipHash);
        expect(again.epochLength).toBe(10n); // fixed at creation
        expect(again.transaction(mined)?.status).toBe('committed');
        expect(again.transaction(pending)?.status).toBe('pending');
        expect(cellsOf(again, lockOf(KEY_B))).toHaveLength(cellsB);
        again.generateBlock();
        expect(again.transaction(pending)?.status).toBe('committed');
        expect(again.medianTime(again.tipHash)).toBeGreaterThan(0n);
      } finally {
        again.close();
      }
    } finally {
      t.close();
    }
  });

  it('gives a chain made before the test xUDT its test_xudt (the code cell is already there)', () => {
    const t = openTestChain();
    try {
      const expected = t.chain.scripts.test_xudt;
      const { test_xudt: _, ...older } = t.chain.scripts;
      t.chain.db.prepare("UPDATE dc_meta SET value = ? WHERE key = 'scripts'").run(JSON.stringify(older));
      t.chain.close();
      const again = DevChain.open({ dir: t.dir, now: () => t.clock.now });
      try {
        expect(again.scripts.test_xudt).toEqual(expected);
        again.faucet(lockOf(KEY_B), 100n * CKB, 0n, 5n);
        again.generateBlock();
      } finally {
        again.close();
      }
    } finally {
      t.close();
    }
  });

  it('refuses a second opener of the same chain directory', () => {
    const t = openTestChain();
    try {
      expect(() => DevChain.open({ dir: t.dir })).toThrow(/already open in another process/);
      t.chain.generateBlock(); // the first opener is unaffected
    } finally {
      t.close();
    }
  });

  it('produces blocks on a timer until stopped', async () => {
    const t = openTestChain({ now: () => BigInt(Date.now()) });
    try {
      const start = t.chain.tip.number;
      t.chain.startMining(20);
      const hash = t.chain.sendTransaction(simpleTransfer(t.chain, KEY_A, lockOf(KEY_B), 100n * CKB));
      for (
        let i = 0;
        i < 500 && (t.chain.tip.number < start + 3n || t.chain.transaction(hash)?.status !== 'committed');
        i++
      ) {
        await new Promise((r) => setTimeout(r, 10));
      }
      t.chain.stopMining();
      expect(t.chain.tip.number).toBeGreaterThanOrEqual(start + 3n);
      expect(t.chain.transaction(hash)?.status).toBe('committed');
      const stopped = t.chain.tip.number;
      await new Promise((r) => setTimeout(r, 60));
      expect(t.chain.tip.number).toBe(stopped);
      // Timestamps strictly increase even when blocks come faster than the clock ticks.
      for (let n = start + 1n; n <= stopped; n++) {
        const cur = t.chain.headerByNumber(n)?.header.timestamp as bigint;
        const prev = t.chain.headerByNumber(n - 1n)?.header.timestamp as bigint;
        expect(cur).toBeGreaterThan(prev);
      }
    } finally {
      t.close();
    }
  });

  it('increase_time moves block timestamps (and the median) forward, and survives a restart', () => {
    const t = openTestChain();
    try {
      const before = t.chain.tip.timestamp;
      t.chain.increaseTime(3_600_000n);
      for (let i = 0; i < 40; i++) t.chain.generateBlock();
      expect(t.chain.tip.timestamp).toBeGreaterThanOrEqual(before + 3_600_000n);
      expect(t.chain.medianTime(t.chain.tipHash)).toBeGreaterThanOrEqual(before + 3_600_000n);
      expect(() => t.chain.increaseTime(-1n)).toThrow(RangeError);
      const tip = t.chain.tip.timestamp;
      t.chain.close();
      const again = DevChain.open({ dir: t.dir, now: () => t.clock.now });
      try {
        again.generateBlock();
        // The clock did not move, but the offset persisted: no jump back to the real clock.
        expect(again.tip.timestamp).toBeGreaterThanOrEqual(t.clock.now + 3_600_000n);
        expect(again.tip.timestamp).toBeGreaterThan(tip);
      } finally {
        again.close();
      }
    } finally {
      t.close();
    }
  });

  it('rejects a transaction paying less than the minimum fee rate', () => {
    const t = openTestChain();
    try {
      const cell = cellsOf(t.chain, lockOf(KEY_A))[0] as ViewCell;
      const tx = buildTx(t.chain, {
        inputs: [{ cell }],
        outputs: [
          { lock: lockOf(KEY_B), capacity: 100n * CKB },
          { lock: lockOf(KEY_A), capacity: cell.output.capacity - 100n * CKB - 10n },
        ],
        keys: [KEY_A],
      });
      expect(() => t.chain.sendTransaction(tx)).toThrow(
        /PoolRejectedTransactionByMinFeeRate: The min fee rate is 1000 shannons\/KW/,
      );
    } finally {
      t.close();
    }
  });
});
