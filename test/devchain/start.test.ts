import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import { startDevchain } from '../../src/devchain/index.ts';
import { CKB, KEY_A, lockOf } from './helpers.ts';

describe('startDevchain', () => {
  it('opens, serves and closes the chain in one call; reopening the directory keeps it', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-devchain-start-'));
    try {
      const a = await startDevchain({
        dir,
        port: 0,
        blockIntervalMs: 0,
        accounts: [{ lock: lockOf(KEY_A), capacity: 500n * CKB }],
      });
      const client = createChainClient({ rpcUrl: a.url });
      expect(await client.chainHash()).toBe(
        '0x677c33a40ddd906cdb6ca996d80081a0a6da2ff40050525da640d5c24d557614',
      );
      await client.generateBlock();
      expect(await client.tipBlockNumber()).toBe(2n);
      await a.close();
      const b = await startDevchain({ dir, port: 0, blockIntervalMs: 0 });
      try {
        const again = createChainClient({ rpcUrl: b.url });
        expect(await again.tipBlockNumber()).toBe(2n);
        expect(
          await again.getCellsCapacity({
            script: { code_hash: lockOf(KEY_A).codeHash, hash_type: 'type', args: lockOf(KEY_A).args },
            script_type: 'lock',
          }),
        ).toBe(500n * CKB);
      } finally {
        await b.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
