import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildGenesis } from '../../src/devchain/genesis.ts';
import { parseChainSpec, SpecError } from '../../src/devchain/spec.ts';

const spec = (name: string) =>
  fs.readFileSync(new URL(`../fixtures/genesis/${name}.toml`, import.meta.url), 'utf8');

describe('genesis from a CKB dev chain spec', () => {
  it('reproduces the reference chain hash of dev.toml', () => {
    const { block } = buildGenesis(parseChainSpec(spec('dev')));
    expect(block.hash).toBe('0x677c33a40ddd906cdb6ca996d80081a0a6da2ff40050525da640d5c24d557614');
    expect(block.transactions[0]?.hash()).toBe(
      '0x47429e7332e2b5d8c3fdf1264e6e625afc42e0e3b4291e41bab056da8e094fdf',
    );
    expect(block.transactions[1]?.hash()).toBe(
      '0x154518a71076c327a5dd3945cd6250deeca8051fa08ec7da2a6078ef1ad5fcba',
    );
    expect(block.header.dao).toBe('0x5f05317f3735a12e0000c16ff2862300ba73e3e094050000005be15701fbfe06');
    expect(block.transactions[0]?.outputs[1]?.type?.hash()).toBe(
      '0x9bd7e06f3ecf4be0f2fcd2188b23f1b9fcc88e5d4b65a8637b17723bbda3cce8',
    );
  });

  it('reproduces the variant spec (no capacity, typed issued cell, epoch length 7)', () => {
    const { block } = buildGenesis(parseChainSpec(spec('variant')));
    expect(block.hash).toBe('0x6412224f266611e8481d7459163b545c195d2f575de2143624a13c65bd8e4ca4');
    expect(block.transactions[0]?.hash()).toBe(
      '0x6ff6df0f208d042a363552bd14eae0ec576400b1e2744bb1c248c1a2a241e4a7',
    );
    expect(block.transactions[1]?.hash()).toBe(
      '0x068260f25550b93f716bccc376d48a5718c96b3c072d993820726583ea3d599f',
    );
  });

  it('rejects malformed specs with a SpecError', () => {
    expect(() => parseChainSpec('name = "x"')).toThrow(SpecError);
    expect(() => parseChainSpec('not toml [')).toThrow(SpecError);
    expect(() => parseChainSpec(spec('dev').replace('hash_type = "data"', 'hash_type = "bogus"'))).toThrow(
      /hash_type/,
    );
  });
});

describe('the Strand dev spec', () => {
  it('puts the funding lock, commitment lock and simple UDT code cells at genesis tx0 outputs 6–8', async () => {
    const { STRAND_SPEC_TOML } = await import('../../src/devchain/setup.ts');
    const { openTestChain } = await import('./helpers.ts');
    const t = openTestChain({ specToml: STRAND_SPEC_TOML });
    try {
      const tx0 = t.chain.blockByNumber(0n)?.transactions[0];
      const s = t.chain.scripts;
      expect(s.funding_lock.cellDeps[0]?.outPoint).toEqual({ txHash: tx0?.hash(), index: 6 });
      expect(s.commitment_lock.cellDeps[0]?.outPoint).toEqual({ txHash: tx0?.hash(), index: 7 });
      expect(s.simple_udt.cellDeps[0]?.outPoint).toEqual({ txHash: tx0?.hash(), index: 8 });
      // What the reference node derives on a dev chain: the data2 hash of outputs 6–8.
      const { ckbHash } = await import('../../src/crypto/hash.ts');
      const { ccc } = await import('@ckb-ccc/core');
      expect(ccc.hexFrom(ckbHash(ccc.bytesFrom(tx0?.outputsData[6] ?? '0x')))).toBe(s.funding_lock.codeHash);
      // The test UDT (issued in the setup block) works against the genesis code cell.
      expect(
        t.chain.liveCellsByLock(ccc.Script.from(tx0?.outputs[9]?.lock ?? s.test_udt)).length,
      ).toBeGreaterThan(0);
    } finally {
      t.close();
    }
  });
});

describe('genesis cache', () => {
  it('reloads a cached genesis identically and rebuilds a damaged cache file', async () => {
    const { cachedGenesis, forgetGenesisMemory, genesisCacheFile } = await import(
      '../../src/devchain/genesis-cache.ts'
    );
    const text = spec('variant');
    const parsed = parseChainSpec(text);
    const built = cachedGenesis(text, parsed);
    const file = genesisCacheFile(text) as string;
    expect(fs.existsSync(file)).toBe(true);
    forgetGenesisMemory();
    const loaded = cachedGenesis(text, parsed);
    expect(loaded).not.toBe(built);
    expect(loaded.hash).toBe('0x6412224f266611e8481d7459163b545c195d2f575de2143624a13c65bd8e4ca4');
    expect(loaded.transactions.map((t) => t.hash())).toEqual(built.transactions.map((t) => t.hash()));
    // Flip one byte inside a stored transaction: the file no longer checks out and is rebuilt.
    const j = JSON.parse(fs.readFileSync(file, 'utf8'));
    j.txs[1] = j.txs[1].slice(0, 200) + (j.txs[1][200] === '0' ? '1' : '0') + j.txs[1].slice(201);
    fs.writeFileSync(file, JSON.stringify(j));
    forgetGenesisMemory();
    const rebuilt = cachedGenesis(text, parsed);
    expect(rebuilt.hash).toBe(built.hash);
    expect(JSON.parse(fs.readFileSync(file, 'utf8')).txs[1]).not.toBe(j.txs[1]);
  });
});
